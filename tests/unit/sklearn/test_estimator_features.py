"""``features=``: descriptors and the user's own columns beside the encoder, end to end."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from exlm_chem.data import descriptors, feature_spec
from exlm_chem.errors import CheckpointError
from exlm_chem.model.frozen_trees import TREE_KINDS
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor


@pytest.fixture(scope="module")
def data(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    ds = load_moleculenet("bbbp", moleculenet_dir)
    label = ds.labels[:, 0]
    rows = np.sort(np.concatenate([np.flatnonzero(label == 0)[:24],
                                   np.flatnonzero(label == 1)[:24]]))
    return [ds.smiles[i] for i in rows], label[rows].astype(int)


@pytest.fixture(scope="module")
def params(tiny_checkpoint):
    # CatBoost: as many trees as a test needs (its 1,000 would take minutes per fit here)
    return dict(pretrained=str(tiny_checkpoint), epochs=1, batch_size=16, lr=1e-3,
                validation_fraction=0.25, random_state=0, n_jobs=1,
                tree_params={"iterations": 30})


def _head_inputs(est, X) -> np.ndarray:
    """What the head's first layer reads for each row of X [n, d + F], one row a call (a
    call's batches are length-sorted)."""
    seen = []
    hook = est.model_.head.dense.register_forward_hook(
        lambda module, args, out: seen.append(args[0].detach().float().numpy().copy()))
    try:
        for i in range(len(X)):
            est.predict(X.iloc[i : i + 1] if hasattr(X, "iloc") else X[i : i + 1])
    finally:
        hook.remove()
    return np.concatenate(seen)


@pytest.fixture(scope="module")
def fitted(params, data):
    X, y = data
    return ExLMMoleculeClassifier(features="rdkit2d", **params).fit(X, y)


def test_rdkit2d_classifier_reads_descriptors_beside_the_pooled_state(fitted, data):
    X, _ = data
    spec = fitted.feature_spec_
    assert spec.kinds == ("rdkit2d",) and spec.names["rdkit2d"] == descriptors.rdkit2d_names()
    assert fitted.model_.n_features == spec.n_features == len(spec.names["rdkit2d"])
    assert fitted.model_.head.dense.in_features == fitted.config_.d_model + spec.n_features
    p = fitted.predict_proba([X[0], "C1CC", X[1], None])  # invalid rows: NaN, none shift
    assert np.isnan(p[[1, 3]]).all() and np.isfinite(p[[0, 2]]).all()
    np.testing.assert_allclose(p[[0, 2]], fitted.predict_proba([X[0], X[1]]), rtol=1e-6)


def test_transform_is_what_the_head_reads(fitted, data):
    X, _ = data
    d, n_features = fitted.config_.d_model, fitted.feature_spec_.n_features
    Z = fitted.transform([X[0], "C1CC", X[1], None, X[2]])
    assert Z.shape == (5, d + n_features) and Z.dtype == np.float32
    assert np.isnan(Z[[1, 3]]).all() and np.isfinite(Z[[0, 2, 4]]).all()  # no row shifts
    np.testing.assert_allclose(Z[[0, 2, 4]], _head_inputs(fitted, X[:3]), rtol=1e-5,
                               atol=1e-6)
    raw = descriptors.molecule_features(["rdkit2d"], fitted._prepared(X[:3], "nan").smiles)
    np.testing.assert_array_equal(Z[[0, 2, 4], d:], fitted.feature_spec_.scaler.transform(raw))
    names = fitted.get_feature_names_out()
    assert names.tolist() == [f"emb_{j}" for j in range(d)] + descriptors.rdkit2d_names()
    with pytest.raises(ValueError, match="row 1"):
        fitted.transform([X[0], "C1CC"], on_invalid="raise")


def test_the_descriptors_change_the_prediction(fitted, data, monkeypatch):
    X, _ = data
    before = fitted.decision_function(X[:4])
    real = descriptors._compute
    monkeypatch.setattr(descriptors, "_compute", lambda kind, smiles: real(kind, smiles) * 3)
    monkeypatch.setattr(descriptors, "MEMO", descriptors.RowMemo(descriptors.MEMO_BYTES))
    assert not np.allclose(fitted.decision_function(X[:4]), before)


def test_save_load_and_pickle_keep_the_features(fitted, data, tmp_path):
    X, _ = data
    expected = fitted.predict_proba(X[:6])
    fitted.save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "metadata.json").read_text())
    assert meta["params"]["features"] == "rdkit2d" and meta["net"]["n_features"] > 0
    assert meta["fitted"]["features"]["names"]["rdkit2d"] == descriptors.rdkit2d_names()
    loaded = ExLMMoleculeClassifier.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.predict_proba(X[:6]), expected, rtol=1e-6)
    np.testing.assert_array_equal(loaded.feature_spec_.scaler.center,
                                  fitted.feature_spec_.scaler.center)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.predict_proba(X[:6]), expected, rtol=1e-6)


def test_load_refuses_descriptors_the_installed_rdkit_cannot_compute(fitted, tmp_path):
    fitted.save(tmp_path / "m")
    path = tmp_path / "m" / "metadata.json"
    meta = json.loads(path.read_text())
    names = meta["fitted"]["features"]["names"]["rdkit2d"]
    names[0] = "DescriptorOfTheFuture"
    path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"cannot reproduce .*missing "
                                              r"\['DescriptorOfTheFuture'\]"):
        ExLMMoleculeClassifier.load(tmp_path / "m")


def test_auto_is_each_estimators_measured_default(params, data):
    X, y = data
    assert ExLMMoleculeRegressor().features == ExLMMoleculeClassifier().features == "auto"
    reg = ExLMMoleculeRegressor(**params).fit(X, y.astype(float))
    assert reg.feature_spec_.kinds == ExLMMoleculeRegressor.AUTO_FEATURES == ("rdkit2d",)
    assert reg.model_.n_features == len(descriptors.rdkit2d_names())
    clf = ExLMMoleculeClassifier(**params, tree_head=False).fit(X, y)
    assert clf.feature_spec_ is None and clf.model_.n_features == 0
    assert ExLMMoleculeRegressor(features=None, **params).fit(X, y.astype(float)
                                                              ).feature_spec_ is None
    assert feature_spec.feature_kinds("auto", auto=("morgan",)) == ("morgan",)
    with pytest.raises(ValueError, match=r"features must be None, 'auto'.*\['automatic'\]"):
        ExLMMoleculeRegressor(features="automatic", **params).fit(X, y.astype(float))


def test_clone_and_grid_search_over_features(params, data):
    X, y = data
    est = ExLMMoleculeClassifier(features=["rdkit2d"], **params)
    assert clone(est).get_params()["features"] == ["rdkit2d"]
    search = GridSearchCV(est, {"features": [None, "rdkit2d"]}, cv=2).fit(X, y)
    assert search.best_params_["features"] in (None, "rdkit2d")
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_each_molecule_is_computed_once_per_fit(params, data, monkeypatch):
    X, y = data
    calls = []
    real = descriptors._compute
    monkeypatch.setattr(descriptors, "_compute", lambda kind, smiles: calls.append(
        (kind, len(smiles))) or real(kind, smiles))
    monkeypatch.setattr(descriptors, "MEMO", descriptors.RowMemo(descriptors.MEMO_BYTES))
    clf = ExLMMoleculeClassifier(features="rdkit2d", n_models=2, augment=1, tta=2,
                                 calibrate="platt", **params)
    clf.fit(X + X[:5], np.concatenate([y, y[:5]]))  # five molecules twice
    # the network's kind and the tree head's (MapLight's, rdkit2d among them): each once
    # for train and held-out rows, members, epochs, views, and both fits of the trees
    assert clf.tree_head_.features.kinds == TREE_KINDS
    assert sorted(calls) == [(kind, len(X)) for kind in sorted(TREE_KINDS)]
    calls.clear()
    clf.predict_uncertainty(X[:5] + X[:5])
    assert calls == []  # the process computed them in fit
    descriptors.MEMO.clear()  # as in a new process (a loaded model)
    clf.predict_uncertainty(X[:5] + X[:5])
    assert calls == [("rdkit2d", 5)]  # the networks' spread: the trees are not asked
    calls.clear()
    clf.predict_proba(X[:5] + X[:5])  # the trees' kinds now, rdkit2d remembered
    assert sorted(calls) == [(kind, 5) for kind in sorted(TREE_KINDS) if kind != "rdkit2d"]


def test_user_columns_regressor_with_morgan(params):
    rng = np.random.default_rng(0)
    smiles = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCCl", "OCCO", "CCOC"] * 3
    frame = pd.DataFrame({"smiles": smiles, "logp": rng.normal(size=24),
                          "charge": rng.integers(0, 2, 24).astype(float)})
    y = frame["logp"] * 2 + 1
    reg = ExLMMoleculeRegressor(features=["morgan", "columns"], **params).fit(frame, y)
    spec = reg.feature_spec_
    assert spec.kinds == ("morgan", "columns") and spec.names["columns"] == ["logp", "charge"]
    assert spec.n_features == 2048 + 2
    pred = reg.predict(frame)
    assert pred.shape == (24,) and np.isfinite(pred).all()
    # transform: the pooled state, then Morgan counts and the two columns, all scaled
    d = reg.config_.d_model
    Z = reg.transform(frame.head(4))
    assert Z.shape == (4, d + 2048 + 2)
    np.testing.assert_allclose(Z, _head_inputs(reg, frame.head(4)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Z[:, -2:], spec.scaler.transform(
        np.hstack([np.zeros((4, 2048)), frame[["logp", "charge"]].head(4)]))[:, -2:])
    assert reg.get_feature_names_out()[-3:].tolist() == ["morgan_r2_2047", "logp", "charge"]
    bad_row = frame.head(3).copy()
    bad_row.loc[1, "smiles"] = "C1CC"
    assert np.isnan(reg.transform(bad_row)[1]).all()
    # a missing value is the training median, 0 after scaling
    gap = frame.head(2).copy()
    gap.loc[0, "logp"] = np.nan
    filled = frame.head(2).copy()
    filled.loc[0, "logp"] = spec.scaler.center[2048]
    np.testing.assert_allclose(reg.predict(gap), reg.predict(filled), rtol=1e-6)
    # an array works too: SMILES first, then the features in the fitted order
    np.testing.assert_allclose(reg.predict(frame.to_numpy(dtype=object)), pred, rtol=1e-6)
    with pytest.raises(ValueError, match=r"feature columns \['charge', 'logp'\] are not"):
        reg.predict(frame[["smiles", "charge", "logp"]])
    with pytest.raises(ValueError, match="X has 1 feature columns, the model was fitted with 2"):
        reg.predict(frame[["smiles", "logp"]])
    bad = frame.astype({"logp": object})
    bad.loc[3, "logp"] = "high"
    with pytest.raises(ValueError, match=r"'logp' holds a value that is not a number at row 3"):
        reg.predict(bad)
    with pytest.raises(ValueError, match="features='columns'"):
        ExLMMoleculeRegressor(**params).fit(frame, y)


def test_bad_features_option_is_one_clear_error():
    with pytest.raises(ValueError, match="features must be None, 'auto', one of"):
        ExLMMoleculeClassifier(features="ecfp").fit(["CCO", "CCN"], [0, 1])
    with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
        ExLMMoleculeClassifier(n_jobs=0).fit(["CCO", "CCN"], [0, 1])


def test_raw_esol_fits_as_pandas_reads_it(params, moleculenet_dir):
    frame = pd.read_csv(moleculenet_dir.parent / "regression" / "esol.csv.gz")
    target = "measured log solubility in mols per litre"
    assert {"smiles", target} <= set(frame.columns)
    part = frame.head(40)
    assert part["smiles"].str.endswith(" ").any()  # rows as Delaney wrote them
    reg = ExLMMoleculeRegressor(**params).fit(part["smiles"], part[target])
    assert not reg.fit_invalid_mask_.any()
    assert np.isfinite(reg.predict(part["smiles"])).all()
