"""exlm_chem.sklearn.prediction: loading a saved estimator and its output columns and values.

Prediction with a real fitted model is exercised end to end in
tests/cli/test_embed_fit_predict.py; here stand-in estimators pin the column rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from exlm_chem.errors import CheckpointError, CheckpointFilesMissingError
from exlm_chem.files.output_owner import ESTIMATOR_FORMAT
from exlm_chem.model.checkpoint_format import FILES, METADATA_FILE
from exlm_chem.sklearn.prediction import load_estimator, output_names, predict_values


class _Classifier:
    classes_ = np.array([0, 1])

    def __init__(self, multitask: bool) -> None:
        self.multitask_ = multitask

    def predict_proba(self, smiles, on_invalid):
        assert on_invalid == "nan"
        return np.array([[0.25, 0.75], [np.nan, np.nan]])  # [n, 2]


class _Regressor:
    multitask_ = False

    def predict(self, smiles, on_invalid):
        assert on_invalid == "nan"
        return np.array([1.5, np.nan], dtype=np.float32)


def test_output_names_follow_the_fitted_targets():
    named = SimpleNamespace(task_names_=["p_np", "logS"], multitask_=True, n_tasks_=2)
    assert output_names(named) == ["p_np", "logS"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=False,
                                        classes_=[0, 1])) == ["probability"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=False)) == ["prediction"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=True,
                                        n_tasks_=3)) == ["task_0", "task_1", "task_2"]


def test_predict_values_are_positive_probabilities_or_values():
    binary = predict_values(_Classifier(multitask=False), ["CCO", "x"])
    np.testing.assert_array_equal(binary, [[0.75], [np.nan]])  # P(classes_[1]) only
    multi = predict_values(_Classifier(multitask=True), ["CCO", "x"])
    np.testing.assert_array_equal(multi, [[0.25, 0.75], [np.nan, np.nan]])
    values = predict_values(_Regressor(), ["CCO", "x"])
    assert values.dtype == np.float64 and values.shape == (2, 1)
    np.testing.assert_array_equal(values, [[1.5], [np.nan]])


def test_load_estimator_names_what_is_wrong(tmp_path: Path):
    with pytest.raises(CheckpointFilesMissingError, match=r"nope does not exist"):
        load_estimator(tmp_path / "nope")
    model = tmp_path / "model"
    model.mkdir()
    for name in FILES:
        (model / name).write_text("{}", encoding="utf-8")
    (model / METADATA_FILE).write_text(json.dumps({"format": ESTIMATOR_FORMAT,
                                                   "estimator": "Forest"}), encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"metadata\.json: estimator 'Forest' is none of "
                                              r"\['ExLMMoleculeClassifier', "
                                              r"'ExLMMoleculeRegressor'\]"):
        load_estimator(model)

