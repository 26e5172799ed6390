"""The scikit-learn contract of ExLMMoleculeClassifier / ExLMMoleculeRegressor.

Of scikit-learn's common checks (``sklearn.utils.estimator_checks``) those that do not
feed numeric X are run as they are (see ``GENERIC_CHECKS``); the ones that need data
(overwriting parameters, not adding public attributes in fit, pickling, cloning,
reproducibility) are re-done here with SMILES.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import estimator_checks

from exlm_chem.data.featurize import InvalidSmilesError
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS
from exlm_chem.model.pretrained import MODEL_ENV, default_model_dir, resolve_pretrained
from exlm_chem.presets import finetune_preset
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

GENERIC_CHECKS = [
    "check_parameters_default_constructible", "check_no_attributes_set_in_init",
    "check_get_params_invariance", "check_set_params", "check_estimator_repr",
    "check_estimator_cloneable", "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_tags_renamed", "check_valid_tag_types", "check_mixin_order",
    "check_estimators_unfitted",
]  # fmt: skip
BAD = ["", "C1CC", None, 42, "C" * 3000]  # empty, unclosed ring, None, not a string, too long


@pytest.fixture(scope="module")
def data(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:32],
                                   np.flatnonzero(label == 1)[:32]]))  # balanced
    X = [ds.smiles[i] for i in rows]
    y = np.where(label[rows] == 1, "permeable", "blocked")  # string classes
    return X, y, ds.labels[rows]


@pytest.fixture(scope="module")
def fitted(params, data):
    X, y, _ = data
    return ExLMMoleculeClassifier(**params).fit(X, y)


@pytest.mark.parametrize("Estimator", [ExLMMoleculeClassifier, ExLMMoleculeRegressor])
@pytest.mark.parametrize("check", GENERIC_CHECKS)
def test_sklearn_generic_checks(Estimator, check):
    function = getattr(estimator_checks, check, None)
    if function is None:
        pytest.skip(f"{check} is not in this scikit-learn version")
    function(Estimator.__name__, Estimator())


def test_init_stores_parameters_only():
    clf = ExLMMoleculeClassifier("no/such/dir", epochs=-3, on_invalid="whatever")
    assert clf.get_params()["epochs"] == -3  # validated in fit, not in __init__
    assert not [k for k in vars(clf) if k.endswith("_")]
    with pytest.raises(ValueError, match="epochs must be an integer >= 0"):
        clf.fit(["CCO", "CCN"], [0, 1])
    with pytest.raises(ValueError, match="on_invalid must be one of"):
        clf.set_params(epochs=1).fit(["CCO", "CCN"], [0, 1])
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="patience must be None or an integer >= 1"):
            ExLMMoleculeClassifier(patience=bad).fit(["CCO", "CCN"], [0, 1])
    assert ExLMMoleculeClassifier(**dataclasses.asdict(finetune_preset("sider"))).lr == 5e-4


def test_fit_learns_attributes_and_keeps_params(params, fitted):
    assert fitted.get_params() == ExLMMoleculeClassifier(**params).get_params()
    assert list(fitted.classes_) == ["blocked", "permeable"]
    assert (fitted.n_tasks_, fitted.multitask_, fitted.best_epoch_) == (1, False, 1 + int(
        np.argmax([r.valid_score for r in fitted.history_])))
    assert fitted.selection_metric_ == "roc_auc" and len(fitted.history_) == 2
    assert fitted.best_score_ == max(r.valid_score for r in fitted.history_)
    assert not fitted.fit_invalid_mask_.any() and fitted.fit_invalid_mask_.shape == (64,)
    assert fitted.pretrained_source_ == params["pretrained"]
    public = {k for k in vars(fitted) if not k.startswith("_") and not k.endswith("_")}
    assert public == set(fitted.get_params())  # fit added no public attribute


def test_outputs_are_consistent(data, fitted):
    X, y, _ = data
    z = fitted.decision_function(X)
    proba = fitted.predict_proba(X)
    assert z.shape == (64,) and proba.shape == (64, 2)
    np.testing.assert_allclose(proba[:, 1], expit(z))
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(fitted.predict_log_proba(X), np.log(proba), atol=1e-12)
    np.testing.assert_array_equal(fitted.predict(X), fitted.classes_[(z > 0).astype(int)])
    assert fitted.score(X, y) == pytest.approx(roc_auc_score(y == "permeable", z))
    assert fitted.transform(X).shape == (64, 64)


def test_a_molecule_gets_one_output_however_it_is_written(params, data, fitted):
    from exlm_chem.data.augment import tta_views

    X, y, _ = data
    canonical, randomized = tta_views(X, 1, seed=3)  # [N] each
    assert sum(a != b for a, b in zip(randomized, X, strict=True)) > 50
    np.testing.assert_array_equal(fitted.predict_proba(randomized), fitted.predict_proba(X))
    np.testing.assert_array_equal(fitted.transform(canonical), fitted.transform(X))
    # fit reads the canonical form too: the same molecules written otherwise, the same model
    refit = ExLMMoleculeClassifier(**params).fit(randomized, y)
    np.testing.assert_array_equal(refit.predict_proba(X), fitted.predict_proba(X))


def test_invalid_smiles_in_predict_give_nan_rows(data, fitted):
    X, _, _ = data
    mixed = [X[0], *BAD, X[1]]
    proba = fitted.predict_proba(mixed)
    assert np.isnan(proba).any(1).tolist() == [False] + [True] * 5 + [False]
    assert np.isnan(proba[1:6]).all() and np.isfinite(proba[[0, 6]]).all()
    np.testing.assert_allclose(proba[[0, 6]], fitted.predict_proba(X[:2]), atol=1e-6)
    labels = fitted.predict(mixed)
    assert labels.dtype == object and labels[1] is None and labels[0] in fitted.classes_
    assert np.isnan(fitted.transform(mixed)[1:6]).all()
    with pytest.raises(InvalidSmilesError) as err:
        fitted.decision_function(mixed, on_invalid="raise")
    assert [row for row, _, _ in err.value.rows] == [1, 2, 3, 4, 5]
    with pytest.warns(UserWarning, match="5 invalid SMILES left out of the score"):
        score = fitted.score(mixed, ["permeable"] * 3 + ["blocked"] + ["permeable"] * 3)
    assert np.isnan(score)  # one class among the valid rows: ROC-AUC undefined
    with pytest.raises(TypeError, match="single string"):
        fitted.predict("CCO")


def test_invalid_smiles_in_fit(params, data, tmp_path):
    X, y, _ = data
    X_bad = list(X[:20]) + BAD
    y_bad = np.concatenate([y[:20], y[:5]])
    with pytest.raises(InvalidSmilesError) as err:
        ExLMMoleculeClassifier(**params).fit(X_bad, y_bad)
    assert [(row, why.split(" (")[0]) for row, _, why in err.value.rows] == [
        (20, "empty SMILES"), (21, "SMILES Parse Error: unclosed ring for input: 'C1CC'"),
        (22, "not a string"),
        (23, "not a string"), (24, "too long")]
    with pytest.warns(UserWarning, match="5 invalid SMILES left out of training"):
        clf = ExLMMoleculeClassifier(**params, on_invalid="drop").fit(X_bad, y_bad)
    assert np.flatnonzero(clf.fit_invalid_mask_).tolist() == [20, 21, 22, 23, 24]
    assert clf.fit_invalid_reasons_[:20] == [None] * 20
    assert clf.fit_invalid_reasons_[20] == "empty SMILES"
    # held out: about a share of the valid rows (whole scaffolds), never an invalid one
    assert clf.held_out_mask_.shape == (25,) and not clf.held_out_mask_[20:].any()
    assert 0 < clf.held_out_mask_.sum() <= 2 * round(params["validation_fraction"] * 20)
    restored = ExLMMoleculeClassifier.load(clf.save(tmp_path / "clf"))
    assert restored.fit_invalid_reasons_ == clf.fit_invalid_reasons_
    np.testing.assert_array_equal(restored.held_out_mask_, clf.held_out_mask_)
    del clf.held_out_mask_  # as in a pickle from before 0.2.2: it still saves
    assert not hasattr(ExLMMoleculeClassifier.load(clf.save(tmp_path / "old")),
                       "held_out_mask_")


def test_label_errors_name_rows(params, data):
    X, _, _ = data
    clf = ExLMMoleculeClassifier(**params)
    y = np.array([0.0, 1.0, np.nan, 1.0, np.nan])
    with pytest.raises(ValueError, match=r"missing labels at rows \[2, 4\]"):
        clf.fit(X[:5], y)
    with pytest.raises(ValueError, match="X has 5 SMILES but y has 4 rows"):
        clf.fit(X[:5], [0, 1, 0, 1])
    with pytest.raises(ValueError, match="exactly two classes, got 3"):
        clf.fit(X[:5], [0, 1, 2, 1, 0])
    with pytest.raises(ValueError, match=r"0, 1 or NaN; other values at rows \[1\]"):
        clf.fit(X[:3], [[0, 1], [2, 1], [np.nan, 0]])
    with pytest.raises(ValueError, match=r"missing or infinite values at rows \[1\]"):
        ExLMMoleculeRegressor(**params).fit(X[:3], [0.5, np.inf, 1.0])


def test_multitask_with_missing_labels(params, data):
    X, _, labels = data
    Y = np.column_stack([labels[:, 0], 1 - labels[:, 0]])
    Y[::3, 1] = np.nan
    frame = pd.DataFrame(Y, columns=["p_np", "not_p_np"])
    clf = ExLMMoleculeClassifier(**params).fit(pd.Series(X), frame)
    assert clf.task_names_ == ["p_np", "not_p_np"] and list(clf.classes_) == [0, 1]
    proba, z = clf.predict_proba(X), clf.decision_function(X)
    assert proba.shape == z.shape == (64, 2)
    np.testing.assert_allclose(proba, expit(z))
    assert set(np.unique(clf.predict(X))) <= {0.0, 1.0}
    rows = ~np.isnan(Y[:, 1])
    expected = (roc_auc_score(Y[:, 0], z[:, 0]) + roc_auc_score(Y[rows, 1], z[rows, 1])) / 2
    assert clf.score(X, Y) == pytest.approx(expected)


def test_same_random_state_same_predictions(params, data, fitted):
    X, y, _ = data
    before = torch.random.get_rng_state()
    again = ExLMMoleculeClassifier(**params).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), before)  # global RNG untouched
    np.testing.assert_array_equal(again.predict_proba(X), fitted.predict_proba(X))
    other = ExLMMoleculeClassifier(**{**params, "random_state": 1}).fit(X, y)
    assert not np.array_equal(other.predict_proba(X), fitted.predict_proba(X))


def test_pickle_round_trip_stores_weights_as_safetensors(data, fitted):
    X, _, _ = data
    blob = pickle.dumps(fitted)
    assert b"FinetuneNet" not in blob and b"torch.nn" not in blob
    restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))
    assert restored.get_params() == fitted.get_params()
    assert "model_" in vars(fitted)  # pickling did not strip the live estimator


def test_save_and_load_without_unpickling(tmp_path, monkeypatch, data, fitted):
    X, _, _ = data
    path = fitted.save(tmp_path / "clf")
    # the default tree head (CatBoost on MapLight's features) reads no encoder states and
    # has no forest: its trees are its one file
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json", "metadata.json", "model.safetensors", "tree_head.safetensors",
        "vocab.txt"]

    def no_unpickling(*args, **kwargs):
        raise AssertionError("load must not unpickle")

    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(torch, "load", no_unpickling)
    loaded = ExLMMoleculeClassifier.load(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))
    assert loaded.get_params() == fitted.get_params()
    assert loaded.classes_.tolist() == fitted.classes_.tolist()
    assert loaded.history_ == fitted.history_ and loaded.best_epoch_ == fitted.best_epoch_
    with pytest.raises(ValueError, match="holds a fitted ExLMMoleculeClassifier"):
        ExLMMoleculeRegressor.load(path)
    with pytest.raises(ValueError, match=r"restore it with its \.load"):
        ExLMMoleculeClassifier(pretrained=str(path)).fit(X[:4], [0, 1, 0, 1])


def test_a_saved_estimator_keeps_its_pooling_not_the_default(tmp_path, params, data):
    # models fitted under the former default ("bos") must not read "mean" after loading
    X, y, _ = data
    other = next(p for p in POOLINGS if p != DEFAULT_POOLING)
    clf = ExLMMoleculeClassifier(**{**params, "epochs": 1, "pooling": other}).fit(X, y)
    meta = json.loads(clf.save(tmp_path / "clf").joinpath("metadata.json").read_text())
    assert meta["params"]["pooling"] == meta["net"]["pooling"] == other
    for restored in (ExLMMoleculeClassifier.load(tmp_path / "clf"),
                     pickle.loads(pickle.dumps(clf))):
        assert restored.pooling == restored.model_.pooling.states == other
        np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_clone_gridsearch_cross_val_and_pipelines(params, data):
    X, y, _ = data
    # scikit-learn's plumbing, not the tree head: without it each of the 8 fits skips the
    # RDKit descriptors and the trees (GridSearchCV over the default estimator, tree head
    # included, is test_estimator_uncertainty.py's grid search)
    clf = ExLMMoleculeClassifier(**{**params, "epochs": 1}, tree_head=False)
    assert clone(clf).get_params() == clf.get_params()
    # refit=False: the best candidate fitted on all rows is any other fit of this test
    search = GridSearchCV(clf, {"lr": [1e-4, 1e-3]}, cv=2, refit=False).fit(X, y)
    assert search.best_params_["lr"] in (1e-4, 1e-3)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    scores = cross_val_score(clf, X, y, cv=2)
    assert scores.shape == (2,) and ((scores >= 0) & (scores <= 1)).all()

    from rdkit import Chem

    canonical = FunctionTransformer(lambda s: [Chem.CanonSmiles(x) for x in s])
    pipe = Pipeline([("canonical", canonical), ("clf", clf)]).fit(X, y)
    assert pipe.predict_proba(X[:5]).shape == (5, 2)
    stacked = Pipeline([("embed", clf), ("logreg", LogisticRegression(max_iter=500))])
    assert stacked.fit(X, y).predict(X[:5]).shape == (5,)


def test_regressor(params, data):
    from rdkit import Chem

    X, _, _ = data
    y = np.array([Chem.MolFromSmiles(s).GetNumHeavyAtoms() * 0.5 - 3 for s in X])
    reg = ExLMMoleculeRegressor(**params).fit(X, y)
    pred = reg.predict(X)
    assert pred.shape == (64,) and reg.selection_metric_ == "rmse"
    assert reg.score(X, y) == pytest.approx(r2_score(y, pred))
    assert abs(pred.mean() - y.mean()) < y.std()  # original units, not standardised
    Y = np.column_stack([y, -y])
    Y[::4, 0] = np.nan
    multi = ExLMMoleculeRegressor(**params).fit(X, Y)
    assert multi.predict([X[0], "C1CC"]).shape == (2, 2)
    assert np.isnan(multi.predict([X[0], "C1CC"])[1]).all()
    restored = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(restored.predict(X), pred)


def test_pretrained_resolution(monkeypatch, tmp_path, tiny_checkpoint):
    assert default_model_dir().parts[-2:] == ("models", "exlm-small")
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"\$EXLM_CHEM_MODEL=.*missing.*exlm-small"):
        resolve_pretrained("default")
    with pytest.raises(FileNotFoundError, match="no pre-trained ExLM checkpoint"):
        ExLMMoleculeClassifier(epochs=1).fit(["CCO", "CCN"], [0, 1])
    monkeypatch.setenv(MODEL_ENV, str(tiny_checkpoint))
    assert resolve_pretrained("default") == tiny_checkpoint
    clf = ExLMMoleculeClassifier(epochs=1, validation_fraction=0).fit(["CCO", "CCN"], [0, 1])
    assert clf.pretrained_source_ == str(tiny_checkpoint) and clf.best_epoch_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # random init: no warning, no file needed
        scratch = ExLMMoleculeClassifier(None, preset="tiny", epochs=0, random_state=0)
        scratch.fit(["CCO", "CCN", "CCC"], ["a", "b", "a"])
    assert scratch.pretrained_source_ == "random:tiny" and scratch.best_epoch_ == 0


def test_unfitted_and_bad_policy(data, fitted):
    X, _, _ = data
    with pytest.raises(NotFittedError):
        ExLMMoleculeClassifier().transform(X)
    with pytest.raises(ValueError, match="on_invalid must be one of"):
        fitted.predict(X, on_invalid="drop")
