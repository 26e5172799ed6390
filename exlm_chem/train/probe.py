"""Probe mode: frozen embeddings + one logistic regression per task.

A cheap, CPU-friendly reading of what a pretrained encoder knows: embed every molecule
once, then fit a logistic regression per task on the training split and score the test
split (ROC-AUC per task, unweighted mean; MUV also PRC-AUC).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exlm_chem.metrics import mean_prc_auc, mean_roc_auc


class ProbeResult(NamedTuple):
    dataset: str
    roc_auc: float  # mean over scored test tasks
    prc_auc: float  # mean PRC-AUC over scored test tasks
    per_task_roc_auc: np.ndarray  # [T], NaN for tasks that could not be fitted or scored
    n_train: int
    n_test: int


def probe_scores(
    embeddings: np.ndarray,
    labels: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    C: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Test-set probabilities [len(test), T] from per-task logistic regressions.

    Features are standardised on the training rows. A task with a single class among
    its labelled training rows gets NaN scores (it cannot be fitted).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(embeddings[train])
    x_train, x_test = scaler.transform(embeddings[train]), scaler.transform(embeddings[test])
    scores = np.full((len(test), labels.shape[1]), np.nan)
    for t in range(labels.shape[1]):
        y = labels[train, t]
        labelled = ~np.isnan(y)
        if np.unique(y[labelled]).size < 2:
            continue
        model = LogisticRegression(C=C, max_iter=2000, random_state=seed)
        model.fit(x_train[labelled], y[labelled].astype(int))
        scores[:, t] = model.predict_proba(x_test)[:, 1]
    return scores


def probe_dataset(name: str, embeddings: np.ndarray, labels: np.ndarray, split) -> ProbeResult:
    """Score one dataset; tasks whose test labels or fit were unusable are skipped."""
    scores = probe_scores(embeddings, labels, split.train, split.test)
    fitted = ~np.isnan(scores).all(axis=0)
    truth = labels[split.test][:, fitted]
    roc = mean_roc_auc(truth, scores[:, fitted])
    prc = mean_prc_auc(truth, scores[:, fitted])
    per_task = np.full(labels.shape[1], np.nan)
    per_task[fitted] = roc.per_task
    return ProbeResult(name, roc.mean, prc.mean, per_task, len(split.train), len(split.test))


#: Ridge strengths tried by :func:`ridge_predictions`, on standardised features.
RIDGE_ALPHAS = (0.1, 1.0, 10.0, 100.0, 1000.0)


def ridge_predictions(embeddings: np.ndarray, labels: np.ndarray, train: np.ndarray,
                      valid: np.ndarray, test: np.ndarray,
                      alphas: tuple[float, ...] = RIDGE_ALPHAS,
                      ) -> tuple[np.ndarray, list, np.ndarray]:
    """Regression probe: test predictions [len(test), T] from one ridge per task.

    Features are standardised on the training rows; each task's ridge strength is the
    one of ``alphas`` with the lowest RMSE on its labelled validation rows (the first,
    i.e. the weakest, on ties; ``alphas[len // 2]`` without validation labels). Returns
    the test predictions, the chosen strength per task (None: no training label, NaN
    predictions) and the chosen ridges' validation predictions [len(valid), T] (for
    split-conformal calibration). Deterministic: no seed.
    """
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(embeddings[train])
    x_train, x_valid, x_test = (scaler.transform(embeddings[rows])
                                for rows in (train, valid, test))
    predictions = np.full((len(test), labels.shape[1]), np.nan)
    valid_predictions = np.full((len(valid), labels.shape[1]), np.nan)
    chosen: list[float | None] = []
    for t in range(labels.shape[1]):
        y, y_valid = labels[train, t], labels[valid, t]
        labelled, labelled_valid = ~np.isnan(y), ~np.isnan(y_valid)
        if not labelled.any():
            chosen.append(None)
            continue
        best, best_rmse = alphas[len(alphas) // 2], np.inf
        if labelled_valid.any():
            for alpha in alphas:
                model = Ridge(alpha=alpha).fit(x_train[labelled], y[labelled])
                error = model.predict(x_valid[labelled_valid]) - y_valid[labelled_valid]
                rmse = float(np.sqrt(np.mean(error**2)))
                if rmse < best_rmse:
                    best, best_rmse = alpha, rmse
        model = Ridge(alpha=best).fit(x_train[labelled], y[labelled])
        predictions[:, t] = model.predict(x_test)
        if len(valid):
            valid_predictions[:, t] = model.predict(x_valid)
        chosen.append(best)
    return predictions, chosen, valid_predictions
