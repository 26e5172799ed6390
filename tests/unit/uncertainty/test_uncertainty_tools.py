"""exlm_chem.uncertainty without a network: SMILES views, scores, calibration, conformal."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem

from exlm_chem.data.augment import EpochViews, randomized_smiles, tta_views
from exlm_chem.uncertainty.calibration import Calibrator, fit_calibrator
from exlm_chem.uncertainty.conformal import conformal_quantile, conformity_scores
from exlm_chem.uncertainty.ensemble import bootstrap_rows, combine, member_seeds
from exlm_chem.uncertainty.params import uncertainty_problems
from exlm_chem.uncertainty.scores import (
    brier_score,
    expected_calibration_error,
    interval_coverage,
    interval_width,
)

SMILES = ["CC(=O)Oc1ccccc1C(=O)O", "C[C@H](N)C(=O)O", "c1ccc2[nH]ccc2c1", "[Na+].[Cl-]", "C"]


def test_randomized_smiles_are_the_same_molecule_and_seeded():
    views = EpochViews(SMILES, 3, seed=5)
    first, again, later = views.epoch(1), EpochViews(SMILES, 3, seed=5).epoch(1), views.epoch(2)
    assert first.smiles == again.smiles and first.smiles != later.smiles  # new per epoch
    assert len(views) == len(first.smiles) == 20
    assert first.smiles[:5] == SMILES and first.rows.tolist() == list(range(5)) * 4
    for s, row in zip(first.smiles, first.rows, strict=True):
        assert Chem.CanonSmiles(s) == Chem.CanonSmiles(SMILES[row])  # stereo kept too
    assert len(set(first.smiles[::5])) == 4  # aspirin really is written differently
    assert first.smiles[4::5] == ["C"] * 4  # one atom: a single spelling
    with pytest.raises(TypeError, match="token id rows"):
        EpochViews([np.array([1, 2, 3])], 1, 0)


def test_tta_views_start_canonical_and_repeat():
    views = tta_views(SMILES, 2, seed=0)
    assert len(views) == 3 and views[0] == [Chem.CanonSmiles(s) for s in SMILES]
    assert views == tta_views(SMILES, 2, seed=0) and views != tta_views(SMILES, 2, seed=1)
    assert randomized_smiles(None, np.random.default_rng(0), "keep") == "keep"


def test_ensemble_helpers():
    assert member_seeds(7, 1) == [7] and member_seeds(7, 3)[0] == 7
    assert member_seeds(7, 3) == member_seeds(7, 3) and len(set(member_seeds(7, 3))) == 3
    rows = bootstrap_rows(50, 3)
    assert rows.shape == (50,) and rows.max() < 50 and len(set(rows.tolist())) < 50
    samples = np.array([[[[0.0]], [[2.0]]], [[[4.0]], [[6.0]]]])  # [M=2, V=2, N=1, T=1]
    mean, spread = combine(samples)
    assert mean.tolist() == [[3.0]]
    assert spread.members.tolist() == [[2.0]]  # member means 1 and 5
    assert spread.tta.tolist() == [[1.0]]  # view means 2 and 4
    assert spread.total.tolist() == [[np.sqrt(5.0)]]


def test_brier_ece_coverage_width_exact():
    y = np.array([[0, 1], [1, np.nan], [1, 0], [0, 1]], dtype=float)
    p = np.array([[0.1, 0.8], [0.9, 0.5], [0.6, 0.4], [0.3, 0.7]])
    brier = brier_score(y, p)
    np.testing.assert_allclose(brier.per_task, [(0.01 + 0.01 + 0.16 + 0.09) / 4,
                                                (0.04 + 0.16 + 0.09) / 3])
    ece = expected_calibration_error(y, p)  # every row in its own bin
    np.testing.assert_allclose(ece.per_task, [(0.1 + 0.1 + 0.4 + 0.3) / 4,
                                              (0.2 + 0.4 + 0.3) / 3])
    assert expected_calibration_error(np.array([0, 1]), np.array([0.5, 0.5])).mean == 0.0
    truth = np.array([1.0, 2.0, np.nan, 10.0])
    lower, upper = np.array([0.0, 2.5, 0.0, 9.0]), np.array([2.0, 3.0, 1.0, np.inf])
    assert interval_coverage(truth, lower, upper).mean == pytest.approx(2 / 3)
    assert interval_width(truth, lower, upper).mean == np.inf
    assert interval_width(truth[:2], lower[:2], upper[:2]).mean == pytest.approx(1.25)


def _miscalibrated(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """True probability p; the "model" is overconfident and biased: expit(3 logit(p) - 1)."""
    from scipy.special import expit, logit

    p = rng.uniform(0.05, 0.95, n)
    return (rng.uniform(size=n) < p).astype(float)[:, None], expit(3 * logit(p) - 1)[:, None]


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_calibration_lowers_ece_of_a_miscalibrated_model(method):
    rng = np.random.default_rng(0)
    y_cal, p_cal = _miscalibrated(2000, rng)
    y_test, p_test = _miscalibrated(5000, rng)
    calibrator = fit_calibrator(method, y_cal, p_cal)
    before = expected_calibration_error(y_test, p_test).mean
    after = expected_calibration_error(y_test, calibrator.apply(p_test)).mean
    assert before > 0.15 and after < 0.03
    assert brier_score(y_test, calibrator.apply(p_test)).mean < brier_score(y_test, p_test).mean
    restored = Calibrator.from_dict(calibrator.to_dict())
    np.testing.assert_array_equal(restored.apply(p_test), calibrator.apply(p_test))
    with_nan = calibrator.apply(np.array([[np.nan], [0.5]]))
    assert np.isnan(with_nan[0, 0]) and 0 <= with_nan[1, 0] <= 1


def test_calibration_leaves_single_class_tasks_alone():
    y = np.array([[0, 1], [1, 1], [0, 1], [1, np.nan]], dtype=float)
    p = np.array([[0.2, 0.3], [0.7, 0.6], [0.4, 0.2], [0.6, 0.9]])
    calibrator = fit_calibrator("isotonic", y, p)
    assert calibrator.params[1] is None
    np.testing.assert_array_equal(calibrator.apply(p)[:, 1], p[:, 1])
    with pytest.raises(ValueError, match="calibrate must be None or one of"):
        fit_calibrator("beta", y, p)
    with pytest.raises(ValueError, match="malformed isotonic"):
        Calibrator.from_dict({"method": "isotonic", "params": [{"a": 1, "b": 0}]})


def test_conformal_quantile_exact():
    scores = np.arange(1.0, 10.0)  # n = 9
    assert conformal_quantile(scores, 0.2) == 8.0  # ceil(10 * 0.8) = 8th smallest
    assert conformal_quantile(scores, 0.5) == 5.0
    assert conformal_quantile(scores, 0.05) == np.inf  # needs the 10th of 9
    with pytest.raises(ValueError, match="alpha must be in"):
        conformal_quantile(scores, 1.0)
    got = conformity_scores(np.array([[1.0, np.nan], [4.0, 2.0]]), np.array([[2.0, 0], [1, 0]]))
    assert [s.tolist() for s in got] == [[1.0, 3.0], [2.0]]


def test_conformal_coverage_matches_one_minus_alpha():
    """Split conformal on y = x + heavy-tailed noise, predictor f(x) = x: averaged over
    repeats, test coverage equals ceil((n + 1)(1 - alpha)) / (n + 1) within sampling error."""
    rng = np.random.default_rng(1)
    n_cal, n_test, repeats, alpha = 199, 1000, 200, 0.1
    coverage = []
    for _ in range(repeats):
        noise = rng.standard_t(3, n_cal + n_test)
        residuals = conformity_scores(noise[:n_cal, None], np.zeros((n_cal, 1)))[0]
        q = conformal_quantile(residuals, alpha)
        coverage.append(np.mean(np.abs(noise[n_cal:]) <= q))
    expected = np.ceil((n_cal + 1) * (1 - alpha)) / (n_cal + 1)  # exactly 0.9 here
    # per repeat: Beta-distributed coverage (sd ~0.021) plus test sampling (sd ~0.0095)
    standard_error = np.std(coverage) / np.sqrt(repeats)
    assert abs(np.mean(coverage) - expected) < 4 * standard_error
    assert 0.015 < np.std(coverage) < 0.03


class _Params:
    def __init__(self, **kw):
        defaults = dict(augment=0, tta=0, n_models=1, bootstrap=False, calibrate=None,
                        validation_fraction=0.1)
        self.__dict__.update({**defaults, **kw})


def test_parameter_problems_all_at_once():
    assert uncertainty_problems(_Params(), "classification") == []
    problems = uncertainty_problems(_Params(augment=-1, tta=1.5, n_models=0, bootstrap="no",
                                            calibrate="beta"), "classification")
    assert [p.split(" must")[0] for p in problems] == ["augment", "tta", "n_models",
                                                       "bootstrap", "calibrate"]
    assert uncertainty_problems(_Params(calibrate="platt"), "regression")[0].startswith(
        "calibrate applies to classifiers only")
    assert "validation_fraction > 0" in uncertainty_problems(
        _Params(calibrate="isotonic", validation_fraction=0), "classification")[0]


def test_reliability_diagram_writes_a_png(tmp_path):
    from exlm_chem.uncertainty.reliability import reliability_diagram

    rng = np.random.default_rng(0)
    y, p = _miscalibrated(300, rng)
    path = reliability_diagram({"a": {"raw": (y[:, 0], p[:, 0])}, "b": {}}, tmp_path / "r.png",
                               title="test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
