"""Per-task metrics with missing labels, against scikit-learn on hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import auc, precision_recall_curve, r2_score, roc_auc_score

from exlm_chem.metrics import mean_prc_auc, mean_r2, mean_rmse, mean_roc_auc

NAN = np.nan
# task 0: complete; task 1: two missing labels; task 2: only positives where labelled
Y = np.array([
    [0, 1, 1],
    [1, NAN, 1],
    [0, 0, NAN],
    [1, 1, 1],
    [0, NAN, 1],
    [1, 0, 1],
])  # fmt: skip
S = np.array([
    [0.2, 0.9, 0.1],
    [0.6, 0.5, 0.2],
    [0.7, 0.3, 0.3],
    [0.9, 0.4, 0.4],
    [0.1, 0.1, 0.5],
    [0.3, 0.2, 0.6],
])  # fmt: skip


def test_mean_roc_auc_masks_missing_and_skips_single_class_tasks():
    mean, per_task = mean_roc_auc(Y, S)
    # by hand: task 0 positives {0.6, 0.9, 0.3} vs negatives {0.2, 0.7, 0.1}: 7 of 9 pairs
    assert per_task[0] == pytest.approx(7 / 9)
    # task 1 on rows 0, 2, 3, 5: positives {0.9, 0.4} vs negatives {0.3, 0.2}: 4 of 4
    assert per_task[1] == pytest.approx(1.0)
    assert np.isnan(per_task[2])
    for t in (0, 1):
        rows = ~np.isnan(Y[:, t])
        assert per_task[t] == pytest.approx(roc_auc_score(Y[rows, t], S[rows, t]))
    assert mean == pytest.approx((7 / 9 + 1.0) / 2)


def test_mean_roc_auc_one_dimensional_and_all_skipped():
    mean, per_task = mean_roc_auc(Y[:, 0], S[:, 0])
    assert per_task.shape == (1,) and mean == pytest.approx(7 / 9)
    mean, per_task = mean_roc_auc(Y[:, 2], S[:, 2])
    assert np.isnan(mean) and np.isnan(per_task).all()


def test_mean_roc_auc_rejects_bad_input():
    with pytest.raises(ValueError, match="0, 1 or NaN"):
        mean_roc_auc(np.array([0, 2, 1]), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="shape"):
        mean_roc_auc(Y, S[:, :2])
    bad = S.copy()
    bad[3, 0] = NAN  # a labelled row without a score is an error, not a silent skip
    with pytest.raises(ValueError, match=r"task 0: non-finite score at labelled row\(s\) \[3\]"):
        mean_roc_auc(Y, bad)
    bad = S.copy()
    bad[1, 1] = NAN  # unlabelled there: ignored
    assert mean_roc_auc(Y, bad).per_task[1] == pytest.approx(1.0)


def test_mean_prc_auc_is_trapezoidal_precision_recall_area():
    mean, per_task = mean_prc_auc(Y, S)
    for t in (0, 1):
        rows = ~np.isnan(Y[:, t])
        precision, recall, _ = precision_recall_curve(Y[rows, t], S[rows, t])
        assert per_task[t] == pytest.approx(auc(recall, precision))
    assert per_task[1] == pytest.approx(1.0)
    assert np.isnan(per_task[2])
    assert mean == pytest.approx(np.nanmean(per_task))


def test_regression_metrics_mask_missing():
    y = np.array([[1.0, NAN], [2.0, 4.0], [3.0, 6.0], [5.0, NAN]])
    p = np.array([[1.5, 9.0], [2.0, 5.0], [2.0, 6.0], [5.0, 9.0]])
    mean, per_task = mean_rmse(y, p)
    assert per_task[0] == pytest.approx(np.sqrt((0.25 + 0 + 1 + 0) / 4))
    assert per_task[1] == pytest.approx(np.sqrt(0.5))
    assert mean == pytest.approx(per_task.mean())
    mean, per_task = mean_r2(y, p)
    assert per_task[0] == pytest.approx(r2_score(y[:, 0], p[:, 0]))
    assert per_task[1] == pytest.approx(r2_score([4.0, 6.0], [5.0, 6.0]))
    one = np.array([[1.0, 2.0], [NAN, 3.0], [NAN, 4.0]])
    assert np.isnan(mean_r2(one, one).per_task[0])  # one labelled row: R^2 undefined
