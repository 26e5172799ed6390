import numpy as np

from exlm_chem.data.hygiene import canonical_smiles, element_key, exclude_molecules


def test_element_key_ignores_hydrogens_charges_and_aromaticity_case():
    assert element_key("c1ccccc1O") == element_key("Oc1ccccc1") == "C,C,C,C,C,C,O"
    assert element_key("[NH3+]CC(=O)[O-]") == "C,C,N,O,O"
    assert element_key("[13CH3]Cl") == "C,Cl"
    assert element_key("Br[Se]c1cc[nH]c1") == "Br,C,C,C,C,N,Se"


def test_exclude_molecules_matches_canonical_forms_and_counts_per_task():
    corpus = ["OCC", "c1ccccc1O", "CCN", "Oc1ccccc1", "not a smiles", "CCCC"]
    excluded = {
        "a": {canonical_smiles("CCO")},
        "b": {canonical_smiles("C1=CC=CC=C1O"), canonical_smiles("CCO")},
    }
    report = exclude_molecules(corpus, excluded)
    assert report.keep.tolist() == [False, False, True, False, True, True]
    assert report.n_removed == 3
    assert report.removed_by_task == {"a": 1, "b": 3}
    # only lines whose element multiset occurs among the excluded were canonicalised
    assert report.n_candidates == 3


def test_exclude_molecules_with_nothing_to_exclude_keeps_all():
    report = exclude_molecules(["CCO", "CCN"], {})
    assert np.all(report.keep) and report.n_removed == 0


def test_heldout_molecules_of_a_real_task_are_removed_from_a_corpus(moleculenet_dir, monkeypatch):
    from exlm_chem.data.hygiene import benchmark_heldout_molecules
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.splits import scaffold_split

    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    held = benchmark_heldout_molecules(["bbbp"], splits=[("scaffold", 0)])
    data = load_moleculenet("bbbp")
    split = scaffold_split(data.smiles)
    assert len(held["bbbp"]) <= len(split.valid) + len(split.test)
    # a corpus holding 5 test molecules (re-written from RDKit's canonical form),
    # 5 training molecules and 2 MOSES-like others
    test_mols = [data.smiles[i] for i in split.test[:5]]
    train_mols = [data.smiles[i] for i in split.train[:5]]
    corpus = [canonical_smiles(s) for s in test_mols] + train_mols + ["CCOC(=O)c1ccccc1", "CCN"]
    report = exclude_molecules(corpus, held)
    assert report.keep.tolist() == [False] * 5 + [True] * 7
    assert report.removed_by_task == {"bbbp": 5}


def test_heldout_molecules_cover_every_split_mode_of_the_runner(moleculenet_dir, monkeypatch):
    from exlm_chem.benchmark.tasks import load_task
    from exlm_chem.data.hygiene import benchmark_heldout_molecules, runner_split_modes
    from exlm_chem.data.split_modes import SPLITS

    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    modes = runner_split_modes((0, 1))
    assert modes == [("scaffold", 0), ("deepchem_scaffold", 0), ("scaffold_balanced", 0),
                     ("scaffold_balanced", 1)]
    assert {split for split, _ in modes} == set(SPLITS)
    held = benchmark_heldout_molecules(["bace"], splits=modes[:3])["bace"]
    parts = {}
    for split, seed in modes[:3]:  # every valid/test molecule of every mode is held out
        data = load_task("bace", split, seed)
        part = [data.smiles[i] for i in np.concatenate([data.valid, data.test])]
        parts[split] = {canonical_smiles(s) for s in part}
        assert parts[split] <= held, (split, seed)
    assert held == set().union(*parts.values())
    assert len(held) > 1.5 * len(parts["scaffold"])  # the other modes add many molecules
