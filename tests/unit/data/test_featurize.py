"""exlm_chem.data.featurize: the one check of an argument holding SMILES
(:func:`smiles_sequence`) and the one check of the SMILES themselves (:func:`check_smiles`),
whose molecules the descriptors read instead of parsing again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from exlm_chem.data.featurize import check_smiles, smiles_sequence

SINGLE_STRING = r"must be a sequence of SMILES strings, got a single string; wrap it in a list"
NO_MODEL = "no/such/checkpoint"  # the argument is refused before any model is looked for


@pytest.fixture(scope="module")
def molecules(moleculenet_dir) -> list[str]:
    return pd.read_csv(moleculenet_dir / "bbbp.csv.gz")["smiles"].iloc[300:332].tolist()


@pytest.fixture(scope="module")
def fitted(tiny_checkpoint, molecules):
    """A classifier and a regressor fitted as briefly as they can be: the check of X comes
    before anything they learned is read."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    quick = dict(pretrained=str(tiny_checkpoint), epochs=1, batch_size=16, random_state=0,
                 device="cpu", tree_head=False, head_first=False, features=None)
    y = np.arange(len(molecules)) % 2
    return (ExLMMoleculeClassifier(**quick, validation_fraction=0).fit(molecules, y),
            ExLMMoleculeRegressor(**quick, validation_fraction=0.25).fit(molecules, y * 1.0))


def _entry_points(tiny_checkpoint, fitted) -> dict[str, Callable[[Any], Any]]:
    """Every public entry point that takes many molecules, as ``call(argument)``."""
    from exlm_chem.analysis import masked_entropy
    from exlm_chem.data import descriptors, hygiene, splits
    from exlm_chem.data.split_modes import split_rows
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.embedding import embed, iter_embeddings
    from exlm_chem.model.molecule_model import MoleculeModel
    from exlm_chem.screening.manifest import model_sha256
    from exlm_chem.screening.worker import EMBED, ModelSpec, compute
    from exlm_chem.sklearn.embedder import ExLMEmbedder
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier
    from exlm_chem.sklearn.prediction import predict_values

    classifier, regressor = fitted
    model = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    tokenizer = SmilesTokenizer()
    spec = ModelSpec(str(tiny_checkpoint), model_sha256(tiny_checkpoint), EMBED, "cpu",
                     "mean", None, 256)
    return {
        "check_smiles": check_smiles,
        "embed": lambda s: embed(s, model=NO_MODEL),
        "iter_embeddings": lambda s: iter_embeddings(s, model=NO_MODEL),
        "MoleculeModel.embed": model.embed,
        "MoleculeModel.prepare": model.prepare,
        "ExLMEmbedder.fit": ExLMEmbedder(tiny_checkpoint, device="cpu").fit,
        "ExLMEmbedder.transform": ExLMEmbedder(tiny_checkpoint, device="cpu").transform,
        "classifier.fit": lambda s: ExLMMoleculeClassifier(NO_MODEL).fit(s, [0, 1, 1]),
        "classifier.predict": classifier.predict,
        "classifier.predict_proba": classifier.predict_proba,
        "classifier.predict_log_proba": classifier.predict_log_proba,
        "classifier.decision_function": classifier.decision_function,
        "classifier.transform": classifier.transform,
        "classifier.score": lambda s: classifier.score(s, [0, 1, 1]),
        "regressor.predict": regressor.predict,
        "regressor.predict_interval": regressor.predict_interval,
        "regressor.score": lambda s: regressor.score(s, [0.0, 1.0, 1.0]),
        "predict_values (exlm-chem predict, screen)": lambda s: predict_values(classifier, s),
        "screen's worker": lambda s: compute(spec, s),
        "masked_entropy": lambda s: masked_entropy(NO_MODEL, s),
        "SmilesTokenizer.batch_encode": tokenizer.batch_encode,
        "SmilesTokenizer.unknown_fraction": tokenizer.unknown_fraction,
        "scaffold_split": splits.scaffold_split,
        "scaffold_balanced_split": splits.scaffold_balanced_split,
        "random_split": splits.random_split,
        "murcko_scaffolds": splits.murcko_scaffolds,
        "split_rows": lambda s: split_rows(s, "scaffold", 0),
        "canonicalize": hygiene.canonicalize,
        "descriptor_values": lambda s: descriptors.descriptor_values("rdkit2d_fast", s),
        "rdkit2d_descriptors": descriptors.rdkit2d_descriptors,
        "morgan_counts": descriptors.morgan_counts,
        "molecule_features": lambda s: descriptors.molecule_features(["morgan"], s),
    }


def test_every_entry_point_refuses_a_single_string_with_the_same_error(tiny_checkpoint,
                                                                      fitted):
    for name, call in _entry_points(tiny_checkpoint, fitted).items():
        for single in ("CCO", b"CCO"):
            with pytest.raises(TypeError, match=SINGLE_STRING) as err:
                call(single)
            # raised by the one function, whatever the entry point
            assert err.traceback[-1].name == "smiles_sequence", (name, single)


def test_the_deepchem_featurizer_keeps_deepchems_single_datapoint_but_refuses_bytes(
        tiny_checkpoint):
    pytest.importorskip("deepchem")
    from exlm_chem.integrations.deepchem import ExLMFeaturizer

    featurizer = ExLMFeaturizer(tiny_checkpoint, device="cpu")
    assert featurizer.featurize("CCO").shape == (1, 64)  # DeepChem: one SMILES, one row
    with pytest.raises(TypeError, match=SINGLE_STRING):
        featurizer.featurize(b"CCO")


def test_the_message_shows_the_fix():
    with pytest.raises(TypeError, match=r"^smiles must be .*; wrap it in a list: \['CCO'\]$"):
        smiles_sequence("CCO", "smiles")
    with pytest.raises(TypeError, match=r"wrap it in a list: \['C{36}\.\.\.\]$"):
        smiles_sequence("C" * 100, "smiles")
    rows = ["CCO"]
    assert smiles_sequence(rows) is rows and smiles_sequence(iter(rows)) is not None


def test_kept_molecules_give_the_canonical_smiles_descriptors(molecules):
    """The check's molecules (one parse each) give the features the canonical SMILES
    would: renumbered into canonical atom order (RDKit's Ipc depends on it)."""
    from exlm_chem.data.descriptors import descriptor_values

    # another spelling of a large molecule whose Ipc depends on the atom order
    rows = [*molecules[:8], "CCC(C)C(N)C1=NC(CS1)C(=O)N[C@@H](CC(C)C)C(=O)N[C@H](CCC(O)=O)"
            "C(=O)N[C@@H]([C@@H](C)CC)C(=O)NCCCC[C@@H]2NC(=O)[C@H](CC(N)=O)NC(=O)[C@@H]"
            "(CC(O)=O)NC(=O)[C@H](Cc3[nH]cnc3)NC(=O)[C@@H](Cc4ccccc4)NC(=O)[C@@H](NC(=O)"
            "[C@@H](CCCN)NC2=O)[C@@H](C)CC", "C1CC", None]
    checked = check_smiles(rows, keep_molecules=True)
    assert checked.valid.tolist() == [True] * 9 + [False, False]
    assert checked.molecules[9] is None and checked.molecules[10] is None
    assert check_smiles(rows).molecules is None  # kept only when asked for
    from_molecules, _ = descriptor_values("rdkit2d", checked.valid_smiles,
                                          molecules=checked.valid_molecules)
    from_canonical, _ = descriptor_values("rdkit2d", checked.valid_smiles)
    np.testing.assert_array_equal(from_molecules, from_canonical)
