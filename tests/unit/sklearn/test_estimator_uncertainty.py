"""Ensembles, SMILES augmentation, calibration and conformal intervals on the estimators.

The README's one-liner (``n_models=5, tta=8, calibrate="isotonic"`` from the default
model) runs, with its claims checked, in tests/docs/test_readme.py.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from exlm_chem.data.augment import tta_views
from exlm_chem.model.molecule_model import PREDICT
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

BAD = ["", "C1CC", None]


def predict_batched(net, smiles, batch_size=64):
    return net.run(smiles, PREDICT, batch_size)


@pytest.fixture(scope="module")
def data(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:32],
                                   np.flatnonzero(label == 1)[:32]]))
    return [ds.smiles[i] for i in rows], label[rows]


@pytest.fixture(scope="module")
def ensemble(params, data):
    X, y = data
    return ExLMMoleculeClassifier(**params, n_models=3, tta=2, calibrate="isotonic").fit(X, y)


@pytest.fixture(scope="module")
def plain(params, data):
    """One model with the shared settings (what the ensemble's first member must equal)."""
    X, y = data
    return ExLMMoleculeClassifier(**params).fit(X, y)


def test_same_seed_same_ensemble_and_first_member_is_the_plain_model(params, data, ensemble,
                                                                    plain):
    X, y = data
    again = ExLMMoleculeClassifier(**params, n_models=3, tta=2, calibrate="isotonic").fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), ensemble.predict_proba(X))
    for a, b in zip(again.predict_uncertainty(X), ensemble.predict_uncertainty(X), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(predict_batched(ensemble.models_[0], X),
                                  predict_batched(plain.model_, X))
    other = predict_batched(ensemble.models_[1], X)
    assert not np.array_equal(other, predict_batched(plain.model_, X))
    # one member: member seeds are again's check above; this one is the bootstrap rows'
    boot = ExLMMoleculeClassifier(**params, bootstrap=True).fit(X, y)
    boot2 = ExLMMoleculeClassifier(**params, bootstrap=True).fit(X, y)
    np.testing.assert_array_equal(boot.predict_proba(X), boot2.predict_proba(X))
    assert not np.array_equal(predict_batched(boot.models_[0], X),
                              predict_batched(plain.model_, X))  # other training rows


def test_outputs_are_the_calibrated_mean_over_members_and_views(ensemble, data):
    X, _ = data
    canonical = tta_views(X, 0, 0)[0]  # the model reads canonical SMILES, views start there
    views = tta_views(canonical, 2, ensemble.seed_)
    assert len(views) == 3 and views[0] == canonical != X  # canonical first, then randomized
    raw = np.stack([[expit(predict_batched(net, v, 32).astype(np.float64)) for v in views]
                    for net in ensemble.models_])  # [3 members, 3 views, 64, 1]
    trees = expit(ensemble.tree_head_.decision(canonical, 32))  # [64, 1]
    w = ensemble.tree_weight_  # the trees' share
    expected = ensemble.calibrator_.apply((1 - w) * raw.mean(axis=(0, 1)) + w * trees)[:, 0]
    proba = ensemble.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], np.clip(expected, 1e-7, 1 - 1e-7), atol=1e-12)
    np.testing.assert_allclose(proba[:, 1], expit(ensemble.decision_function(X)), atol=1e-12)
    spread = ensemble.predict_uncertainty(X)
    np.testing.assert_allclose(spread.members, raw.mean(1).std(0)[:, 0], atol=1e-12)
    np.testing.assert_allclose(spread.tta, raw.mean(0).std(0)[:, 0], atol=1e-12)
    np.testing.assert_allclose(spread.total, raw.reshape(9, 64).std(0), atol=1e-12)
    assert ensemble.calibrator_.method == "isotonic"


def test_uncertainty_stays_aligned_with_invalid_rows(ensemble, data):
    X, _ = data
    mixed = [X[0], *BAD, X[1], X[2]]
    spread, proba = ensemble.predict_uncertainty(mixed), ensemble.predict_proba(mixed)
    assert np.isnan(proba).any(1).tolist() == [False, True, True, True, False, False]
    clean = ensemble.predict_uncertainty(X[:3])
    for name in ("members", "tta", "total"):
        got = getattr(spread, name)
        assert np.isnan(got[1:4]).all()
        np.testing.assert_allclose(got[[0, 4, 5]], getattr(clean, name), atol=1e-12)
    assert np.isnan(proba[1:4]).all() and np.isfinite(proba[[0, 4, 5]]).all()


def test_augmentation_is_reproducible_and_changes_training(params, data, plain):
    X, y = data
    a = ExLMMoleculeClassifier(**params, augment=2).fit(X, y)
    b = ExLMMoleculeClassifier(**params, augment=2).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), plain.predict_proba(X))
    assert len(plain.history_) == len(a.history_) == 2  # same epochs, each 3x the molecules


def test_tta_is_a_prediction_setting(data, plain):
    X, _ = data
    clf = copy.deepcopy(plain)  # set_params below changes it
    with pytest.raises(ValueError, match="needs an ensemble"):
        clf.predict_uncertainty(X)
    before = clf.predict_proba(X)
    clf.set_params(tta=3)
    spread = clf.predict_uncertainty(X)
    assert (spread.members == 0).all() and (spread.tta > 0).any()
    assert not np.array_equal(clf.predict_proba(X), before)
    with pytest.raises(ValueError, match="tta must be an integer >= 0"):
        clf.set_params(tta=-1).predict(X)


def test_bad_parameters_are_reported_in_fit(params, data):
    X, y = data
    with pytest.raises(ValueError, match=r"n_models must be an integer >= 1.*calibrate must"):
        ExLMMoleculeClassifier(**params, n_models=0, calibrate="beta").fit(X, y)
    with pytest.raises(ValueError, match="calibrate applies to classifiers only"):
        ExLMMoleculeRegressor(**params, calibrate="platt").fit(X, y)
    with pytest.raises(ValueError, match="leaves none"):
        ExLMMoleculeClassifier(**{**params, "validation_fraction": 0.01},
                               calibrate="platt").fit(X[:20], y[:20])


def test_ensemble_save_load_and_pickle(tmp_path, monkeypatch, ensemble, data):
    X, _ = data
    path = ensemble.save(tmp_path / "ens")
    # the default tree head (CatBoost, no encoder states, no forest): one file of trees
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json", "member_1.safetensors", "member_2.safetensors", "metadata.json",
        "model.safetensors", "tree_head.safetensors", "vocab.txt"]
    assert ensemble.save(path) == path  # again over it: the member files are the model's own
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("load unpickled"))
    loaded = ExLMMoleculeClassifier.load(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(loaded.predict_proba(X), ensemble.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict_uncertainty(X).total,
                                  ensemble.predict_uncertainty(X).total)
    assert loaded.get_params() == ensemble.get_params() and len(loaded.models_) == 3
    restored = pickle.loads(pickle.dumps(ensemble))
    np.testing.assert_array_equal(restored.predict_proba(X), ensemble.predict_proba(X))
    (path / "member_2.safetensors").unlink()
    with pytest.raises(ValueError, match=r"member_2\.safetensors is missing"):
        ExLMMoleculeClassifier.load(path)


def test_clone_and_grid_search_over_uncertainty_parameters(params, data):
    X, y = data
    clf = ExLMMoleculeClassifier(**{**params, "epochs": 1}, n_models=2, tta=1, augment=1,
                                 bootstrap=True, calibrate="platt")
    assert clone(clf).get_params() == clf.get_params()
    # two candidates that set every value of both parameters, not their four combinations
    # (each candidate is two fits of a 2-member ensemble, one per fold)
    search = GridSearchCV(clf, [{"tta": [0], "calibrate": [None]},
                                {"tta": [2], "calibrate": ["isotonic"]}], cv=2)
    search.fit(X, y)
    assert search.best_params_["tta"] in (0, 2)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert len(search.best_estimator_.models_) == 2


def test_regressor_conformal_interval(tmp_path, params, data):
    from rdkit import Chem

    X, _ = data
    y = np.array([Chem.MolFromSmiles(s).GetNumHeavyAtoms() * 0.5 - 3 for s in X])
    reg = ExLMMoleculeRegressor(**params, n_models=2, tta=1).fit(X, y)
    scores = reg.conformity_scores_[0]
    n = int(reg.held_out_mask_.sum())  # about a quarter of 64: whole scaffolds
    assert scores.shape == (n,) and 0 < n < 99 and (np.diff(scores) >= 0).all()
    lower, upper = reg.predict_interval([X[0], "C1CC", X[1]], alpha=0.2)
    pred = reg.predict([X[0], "C1CC", X[1]])
    q = scores[int(np.ceil((n + 1) * 0.8)) - 1]  # e.g. the 14th of 16 residuals
    np.testing.assert_allclose(upper - pred, [q, np.nan, q])
    np.testing.assert_allclose(pred - lower, [q, np.nan, q])
    assert np.isinf(reg.predict_interval(X[:2], alpha=0.01).upper).all()  # n < 99: too few
    assert reg.predict_uncertainty(X[:4]).members.shape == (4,)
    loaded = ExLMMoleculeRegressor.load(reg.save(tmp_path / "reg"))
    np.testing.assert_array_equal(loaded.predict_interval(X, 0.2).upper,
                                  reg.predict_interval(X, 0.2).upper)
    # no held-out molecules, no conformity scores: no training needed to show it
    unscored = {**params, "validation_fraction": 0, "epochs": 0}
    with pytest.raises(ValueError, match="validation_fraction > 0"):
        ExLMMoleculeRegressor(**unscored, tree_head=False).fit(X[:8], y[:8]).predict_interval(
            X[:2])
