"""The regressor's target transform: which tasks "auto" logs, and predictions that come
back on y's own scale."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.sklearn.target_transform import choose_log, forward, inverse


def _columns() -> np.ndarray:
    rng = np.random.default_rng(0)
    skewed = rng.lognormal(0.0, 1.5, 200)  # half-lives, volumes: positive, long right tail
    normal = rng.normal(2.0, 1.0, 200)  # logD: takes both signs
    left = 100 - rng.lognormal(0.0, 1.0, 200)  # % bound: positive, long left tail
    labels = np.stack([skewed, normal, left], axis=1)
    labels[::7, 0] = np.nan  # a missing label is left alone
    return labels


def test_auto_logs_only_a_positive_right_skewed_task(caplog) -> None:
    with caplog.at_level("INFO", logger="exlm_chem.sklearn.target_transform"):
        chosen = choose_log(_columns(), "auto", ["t_half", "logd", "ppb"])
    assert chosen.tolist() == [True, False, False]
    assert "t_half is positive and skewed" in caplog.text and "logd" not in caplog.text
    assert not choose_log(_columns(), None).any()


def test_log_refuses_a_non_positive_task_naming_it() -> None:
    with pytest.raises(ValueError, match=r"logd has .* value\(s\) <= 0"):
        choose_log(_columns(), "log", ["t_half", "logd", "ppb"])


def test_forward_and_inverse_round_trip_and_keep_nan() -> None:
    labels = _columns()
    chosen = np.array([True, False, False])
    back = inverse(forward(labels, chosen), chosen)
    assert np.allclose(back, labels, equal_nan=True)
    assert np.isnan(forward(labels, chosen)[::7, 0]).all()


def test_the_regressor_fits_the_log_and_predicts_on_ys_scale(params, tmp_path) -> None:
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.sklearn.estimator import ExLMMoleculeRegressor

    smiles = list(load_moleculenet("bbbp").smiles[:80])
    y = np.random.default_rng(1).lognormal(1.0, 1.5, len(smiles))  # positive, skewed
    reg = ExLMMoleculeRegressor(**params).fit(smiles, y)  # "auto", the default
    assert reg.target_log_.tolist() == [True]
    predicted = reg.predict(smiles)
    # on y's scale: positive (an exp) and of y's size, not log(y)'s
    assert (predicted > 0).all()
    assert np.median(predicted) > 0.3 * np.median(y)
    lower, upper = reg.predict_interval(smiles[:5])
    assert np.all(lower <= predicted[:5]) and np.all(predicted[:5] <= upper)
    reg.save(tmp_path / "model")
    loaded = ExLMMoleculeRegressor.load(tmp_path / "model")
    assert loaded.target_log_.tolist() == [True]
    assert np.allclose(loaded.predict(smiles), predicted)


def test_the_classifier_refuses_a_target_transform(params) -> None:
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    with pytest.raises(ValueError, match="target_transform='log' is the regressor's"):
        ExLMMoleculeClassifier(**params, target_transform="log").fit(["CCO", "CCN"], [0, 1])
