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

from exlm_chem.data.featurize import check_smiles
from exlm_chem.errors import CheckpointError, CheckpointFilesMissingError
from exlm_chem.files.output_owner import ESTIMATOR_FORMAT
from exlm_chem.model.checkpoint_format import FILES, METADATA_FILE
from exlm_chem.model.molecule_model import ModelInputs
from exlm_chem.sklearn.prediction import load_estimator, output_names, predict_values


class _Regressor:
    """The estimator's two steps of a prediction: the check at the edge, the outputs."""

    outputs = np.array([[1.5]])  # [n_valid, T] of the valid rows

    def _prepared_rows(self, smiles, columns, on_invalid):
        assert on_invalid == "nan" and columns is None
        checked = check_smiles(smiles)
        return ModelInputs(checked, checked.valid_smiles, None)

    def _outputs_of(self, inputs):
        return inputs.scatter(self.outputs)


class _Classifier(_Regressor):
    outputs = np.log([[1 / 3, 3.0]])  # logits of 0.25 and 0.75

    def predict_proba(self, X, on_invalid="nan"):
        raise AssertionError("the CLI's path takes the logits of the one check's rows")


def test_output_names_follow_the_fitted_targets():
    named = SimpleNamespace(task_names_=["p_np", "logS"], multitask_=True, n_tasks_=2)
    assert output_names(named) == ["p_np", "logS"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=False,
                                        classes_=[0, 1])) == ["probability"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=False)) == ["prediction"]
    assert output_names(SimpleNamespace(task_names_=None, multitask_=True,
                                        n_tasks_=3)) == ["task_0", "task_1", "task_2"]


def test_predict_values_are_positive_probabilities_or_values_with_reasons():
    multi = predict_values(_Classifier(), ["CCO", "C1CC"])
    np.testing.assert_allclose(multi.values, [[0.25, 0.75], [np.nan, np.nan]])
    assert multi.valid.tolist() == [True, False] and multi.reasons[0] is None
    assert "unclosed ring" in multi.reasons[1]
    out = predict_values(_Regressor(), ["CCO", "x"])
    assert out.values.dtype == np.float64 and out.values.shape == (2, 1)
    np.testing.assert_array_equal(out.values, [[1.5], [np.nan]])


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

