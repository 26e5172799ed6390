import numpy as np

from exlm_chem.data.hygiene import canonical_smiles, canonicalize


def test_canonicalize_keeps_order_and_marks_unparsable_rows():
    assert canonicalize(["OCC", "not a smiles", "C1=CC=CC=C1O"]) == ["CCO", None, "Oc1ccccc1"]


def test_heldout_molecules_of_a_real_task_are_its_canonical_test_molecules(moleculenet_dir,
                                                                             monkeypatch):
    from exlm_chem.data.hygiene import benchmark_heldout_molecules
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.splits import scaffold_split

    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    held = benchmark_heldout_molecules(["bbbp"], splits=[("scaffold", 0)])
    data = load_moleculenet("bbbp")
    split = scaffold_split(data.smiles)
    assert len(held["bbbp"]) <= len(split.valid) + len(split.test)
    # the test molecules are held out however they are written; training molecules are not
    assert {canonical_smiles(data.smiles[i]) for i in split.test[:5]} <= held["bbbp"]
    assert not {canonical_smiles(data.smiles[i]) for i in split.train[:5]} & held["bbbp"]


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
