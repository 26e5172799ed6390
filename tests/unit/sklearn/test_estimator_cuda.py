"""The estimators with ``device="cuda"``: fit, predict, save and load on a GPU.

Self-contained (the shipped ``models/exlm-small`` and a few SMILES written here), so that
it runs on the GPU machine, where the data mirror does not travel. Skipped without CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

# small polar molecules (label 1) against hydrocarbons and halocarbons (label 0)
POLAR = [
    "OCCO",
    "NCC(=O)O",
    "OC1CCCCC1",
    "CC(=O)O",
    "NC(=O)N",
    "OCC(O)CO",
    "CCO",
    "CCN",
    "OC(=O)CC(=O)O",
    "NCCO",
    "O=C(O)c1ccccc1",
    "Oc1ccccc1",
]
APOLAR = [
    "CCCCCC",
    "c1ccccc1",
    "CC(C)CC",
    "ClCCl",
    "CCCCCCCC",
    "Cc1ccccc1",
    "C1CCCCC1",
    "CCCl",
    "BrCCBr",
    "CC(C)(C)C",
    "c1ccc2ccccc2c1",
    "FC(F)(F)C(F)(F)F",
]
SMILES = POLAR + APOLAR
LABELS = np.array([1] * len(POLAR) + [0] * len(APOLAR))
PARAMS = dict(epochs=2, batch_size=8, validation_fraction=0.25, random_state=0, progress=False)


def test_the_classifier_fits_and_predicts_on_cuda(tmp_path):
    clf = ExLMMoleculeClassifier(device="cuda", on_invalid="drop", **PARAMS).fit(
        [*SMILES, "C1CC"], [*LABELS, 0]
    )
    assert next(clf.model_.parameters()).is_cuda  # trained where it was asked to
    proba = clf.predict_proba([*SMILES, "not a smiles"], on_invalid="nan")
    assert proba.shape == (len(SMILES) + 1, 2)
    assert np.isfinite(proba[:-1]).all() and np.isnan(proba[-1]).all()  # rows stay aligned
    assert clf.fit_invalid_mask_.tolist() == [False] * len(SMILES) + [True]

    # the same fitted weights give the same outputs on the CPU and after a save / load
    on_gpu = clf.decision_function(SMILES)
    on_cpu = clf.set_params(device="cpu").decision_function(SMILES)
    np.testing.assert_allclose(on_gpu, on_cpu, atol=2e-2)
    loaded = ExLMMoleculeClassifier.load(clf.save(tmp_path / "clf"))
    np.testing.assert_allclose(loaded.decision_function(SMILES), on_cpu, atol=1e-5)


def test_the_regressor_fits_on_cuda_and_moves_the_model_back():
    y = LABELS.astype(float) * 2.0 - 1.0
    reg = ExLMMoleculeRegressor(device="cuda", **PARAMS).fit(SMILES, y)
    pred = reg.predict(SMILES)
    assert pred.shape == (len(SMILES),) and np.isfinite(pred).all()
    assert next(reg.model_.parameters()).is_cuda
