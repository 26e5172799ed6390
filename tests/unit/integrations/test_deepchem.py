"""ExLMFeaturizer: exlm_chem.embed as a DeepChem MolecularFeaturizer, with the installed
deepchem (a dev dependency)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

dc = pytest.importorskip("deepchem")

from rdkit import Chem  # noqa: E402

from exlm_chem.embedding import embed  # noqa: E402
from exlm_chem.integrations.deepchem import ExLMFeaturizer  # noqa: E402
from exlm_chem.model.molecule_model import MoleculeModel  # noqa: E402

BAD = ["C1CC", "not a smiles"]


@pytest.fixture(scope="module")
def model(tiny_checkpoint) -> str:
    return str(tiny_checkpoint)


@pytest.fixture(scope="module")
def bbbp(moleculenet_dir) -> pd.DataFrame:
    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz")
    return frame.iloc[300:330][["smiles", "p_np"]].reset_index(drop=True)  # valid rows


def test_importing_exlm_chem_does_not_import_deepchem():
    code = ("import sys, exlm_chem, exlm_chem.integrations\n"
            "from exlm_chem import ExLMEmbedder, embed\n"
            "print('deepchem' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_is_a_molecular_featurizer_with_rows_of_embed(model, bbbp):
    featurizer = ExLMFeaturizer(model, device="cpu")
    assert isinstance(featurizer, dc.feat.MolecularFeaturizer)
    smiles = bbbp["smiles"].tolist()
    X = featurizer(smiles)
    assert X.dtype == np.float32 and X.shape == (30, 64)
    np.testing.assert_array_equal(X, embed(smiles, model=model, device="cpu")[0])
    # RDKit molecules and a single datapoint, as DeepChem accepts them
    mols = [Chem.MolFromSmiles(s) for s in smiles[:3]]
    np.testing.assert_allclose(featurizer.featurize(mols), X[:3], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(featurizer.featurize(smiles[0]), X[:1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(featurizer._featurize(mols[0]), X[0], rtol=1e-4, atol=1e-5)


def test_one_forward_pass_per_batch(model, bbbp, monkeypatch):
    passes = []
    original = MoleculeModel.fingerprint  # every forward pass of the embedder goes here

    def counting(self, input_ids, *rest):
        passes.append(len(input_ids))
        return original(self, input_ids, *rest)

    monkeypatch.setattr(MoleculeModel, "fingerprint", counting)
    ExLMFeaturizer(model, batch_size=16, device="cpu").featurize(bbbp["smiles"])
    # length-bucketed batches of at most 16 (exlm_chem.data.batching), not 30 passes of one
    assert sum(passes) == 30 and max(passes) <= 16 and len(passes) <= 30 // 4


def test_failures_are_empty_arrays_with_a_warning(model, bbbp):
    smiles = [bbbp["smiles"][0], BAD[0], bbbp["smiles"][1], None, BAD[1]]
    with pytest.warns(UserWarning, match=r"3 of 5 datapoints could not be featurized") as rec:
        out = ExLMFeaturizer(model, device="cpu").featurize(smiles)
    message = str(rec[0].message)
    assert "datapoint 1 'C1CC'" in message and "unclosed ring" in message
    assert "datapoint 3 None" in message and "datapoint 4 'not a smiles'" in message
    assert out.dtype == object and out.shape == (5,)
    assert [np.asarray(x).size for x in out] == [64, 0, 64, 0, 0]
    expected = embed(smiles, model=model, device="cpu")[0]
    np.testing.assert_array_equal(np.stack([out[0], out[2]]), expected[[0, 2]])
    with pytest.raises(ValueError, match="unclosed ring"):
        ExLMFeaturizer(model, device="cpu")._featurize("C1CC")


def test_csv_loader_dataset_rows_equal_embed(model, bbbp, tmp_path):
    frame = bbbp.copy()
    frame.loc[4, "smiles"] = BAD[0]  # DeepChem leaves failed rows out (valid_inds)
    frame.loc[17, "smiles"] = BAD[1]
    frame.to_csv(tmp_path / "mols.csv", index=False)
    loader = dc.data.CSVLoader(tasks=["p_np"], feature_field="smiles",
                               featurizer=ExLMFeaturizer(model, device="cpu"))
    with pytest.warns(UserWarning, match="2 of 30 datapoints"):
        dataset = loader.create_dataset(str(tmp_path / "mols.csv"),
                                        data_dir=str(tmp_path / "dataset"))
    kept = frame.drop(index=[4, 17])
    assert dataset.X.shape == (28, 64)
    assert dataset.ids.tolist() == kept["smiles"].tolist()
    np.testing.assert_array_equal(dataset.y[:, 0], kept["p_np"].to_numpy())
    expected, valid = embed(kept["smiles"], model=model, device="cpu")
    assert valid.all()
    np.testing.assert_array_equal(dataset.X, expected)
