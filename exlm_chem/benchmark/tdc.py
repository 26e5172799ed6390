"""The TDC ADMET benchmark group as a benchmark suite: its tasks as :class:`TaskData` and
its metrics.

TDC's protocol, as its leaderboard runs it: for each seed (1-5) ``train_val`` is re-split
by scaffold into train and valid (0.875 / 0.125, drawn with the seed), the model is fitted
with those, predicts the fixed test part, and the task's metric is averaged over the seeds
(mean and population sd). Here the re-split is the package's seeded balanced scaffold split
(:func:`~exlm_chem.data.splits.scaffold_balanced_split`, the algorithm of TDC's
``create_scaffold_split`` for two parts: scaffold groups in a seeded order fill train, then
valid). Every method fits on train alone; the valid part is a held-out part scored beside
the test part, so that defaults can be chosen on validation figures without reading a test
figure (:attr:`TaskData.held_out_valid`).

The leaderboard's entries fit on all of ``train_val`` instead (MapLight, most others): the
split :data:`TDC_FIT_SPLIT` (``exlm-chem benchmark --suite tdc-admet --fit-on train_val``)
gives every cell the whole ``train_val`` as its training rows and no valid part; the
seed then only seeds the method. Those are the rows a report compares with the published
figures; the held-out rows are the ones that choose defaults.
"""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.tasks import TaskData, cluster_part

logger = logging.getLogger(__name__)

#: The name cells record as their split: train_val re-split, the valid part held out.
TDC_SPLIT = "tdc_scaffold"
#: The split of cells fitted on all of train_val, as the leaderboard's entries are.
TDC_FIT_SPLIT = "tdc_train_val"
#: The out-of-distribution split (``--split cluster``): every molecule of the task (train_val
#: and test), the test part whole similarity clusters, the least like the rest first
#: (:func:`~exlm_chem.data.similarity.cluster_held_out`); the seed only seeds the method.
TDC_CLUSTER_SPLIT = "tdc_cluster"
#: ``--fit-on`` -> split
TDC_SPLITS = {"train": TDC_SPLIT, "train_val": TDC_FIT_SPLIT}
#: TDC's seeds.
TDC_SEEDS = (1, 2, 3, 4, 5)
TRAIN_FRACTION = 0.875

METRIC_TITLES = {"mae": "MAE", "spearman": "Spearman", "roc_auc": "AUROC",
                 "prc_auc": "AUPRC"}


def tdc_metric(metric: str, truth: np.ndarray, predicted: np.ndarray) -> float:
    """The task's leaderboard metric as TDC computes it (``tdc.Evaluator``): MAE,
    Spearman's rho, ROC-AUC, or average precision for "AUPRC".

    ``truth`` and ``predicted`` are [n] arrays. A NaN prediction is an error: TDC's
    metrics have no score for a missing prediction, and every TDC molecule is valid.
    """
    truth = np.asarray(truth, dtype=np.float64).ravel()
    predicted = np.asarray(predicted, dtype=np.float64).ravel()
    if truth.shape != predicted.shape:
        raise ValueError(f"truth {truth.shape} and predictions {predicted.shape} differ")
    if np.isnan(predicted).any():
        raise ValueError(f"{int(np.isnan(predicted).sum())} predictions are NaN")
    if metric == "mae":
        return float(np.mean(np.abs(truth - predicted)))
    if metric == "spearman":
        from scipy.stats import spearmanr

        return float(spearmanr(truth, predicted).statistic)
    from sklearn.metrics import average_precision_score, roc_auc_score

    if metric == "roc_auc":
        return float(roc_auc_score(truth, predicted))
    if metric == "prc_auc":
        return float(average_precision_score(truth, predicted))
    raise ValueError(f"unknown TDC metric {metric!r}; choose from {list(METRIC_TITLES)}")


class TDCSource(NamedTuple):
    """Cells' data from the TDC ADMET group file (``path``: as ``--data``: the zip, its
    folder, or None for the loader's search order)."""

    path: str | os.PathLike[str] | None = None

    def sha256(self, task: str) -> str:
        from exlm_chem.data.tdc_admet import tdc_admet_sha256

        return tdc_admet_sha256(self.path)

    def load(self, task: str, split: str, seed: int) -> TaskData:
        known = [*TDC_SPLITS.values(), TDC_CLUSTER_SPLIT]
        if split not in known:
            raise ValueError(f"a TDC split is one of {known}, got {split!r}")
        return load_tdc_task(task, seed, self.path, fit_train_val=split == TDC_FIT_SPLIT,
                             cluster=split == TDC_CLUSTER_SPLIT)


def load_tdc_task(name: str, seed: int, path: str | os.PathLike[str] | None = None,
                  fit_train_val: bool = False, cluster: bool = False) -> TaskData:
    """One TDC task for one seed: ``train_val`` re-split by scaffold into train and valid,
    the fixed test part after it (rows ``n_train_val ...``), labels as TDC gives them.
    ``fit_train_val``: all of ``train_val`` is the train part, no valid part. ``cluster``:
    the out-of-distribution split (:data:`TDC_CLUSTER_SPLIT`), the same for every seed."""
    from exlm_chem.data.rdkit_reasons import canonical_or_failure
    from exlm_chem.data.splits import scaffold_balanced_split
    from exlm_chem.data.tdc_admet import load_tdc_admet

    task = load_tdc_admet(name, path=path)
    smiles = task.train_val.smiles + task.test.smiles
    labels = np.concatenate([task.train_val.y, task.test.y])[:, None]  # [N, 1]
    n = len(task.train_val.smiles)
    # a molecule RDKit cannot read (2 test rows of solubility_aqsoldb, valence errors) has no
    # features and no prediction: it is left out, named, and n_test records how many remain
    readable = np.array([canonical_or_failure(s)[0] is not None for s in smiles])
    if not readable.all():
        bad = np.flatnonzero(~readable)
        logger.warning("%s: %d row(s) RDKit cannot read left out (%d of train_val, %d of the "
                       "test part): %s", name, bad.size, int((bad < n).sum()),
                       int((bad >= n).sum()),
                       ", ".join(f"{'test' if i >= n else 'train_val'} row {i - n if i >= n else i}"
                                 for i in bad[:10]))
    keep = np.flatnonzero(readable)
    smiles = [smiles[i] for i in keep]
    labels = labels[keep]
    n = int((keep < n).sum())
    test = np.arange(n, len(smiles), dtype=np.int64)
    if cluster:
        part = cluster_part(smiles)
        return TaskData(name, smiles, labels, part.train_rows, np.zeros(0, np.int64),
                        part.held_rows, task.sha256, task.spec.task_type,
                        metric=task.spec.metric, held_out_valid=False)
    if fit_train_val:
        return TaskData(name, smiles, labels, np.arange(n, dtype=np.int64),
                        np.zeros(0, np.int64), test, task.sha256, task.spec.task_type,
                        metric=task.spec.metric, held_out_valid=False)
    parts = scaffold_balanced_split(smiles[:n], (TRAIN_FRACTION, 1.0 - TRAIN_FRACTION, 0.0),
                                    seed=seed)
    # groups that fit neither part are valid's: TDC's two-part split has no third part
    valid = np.sort(np.concatenate([parts.valid, parts.test])).astype(np.int64)
    return TaskData(name, smiles, labels, np.sort(parts.train).astype(np.int64), valid, test,
                    task.sha256,
                    task.spec.task_type, metric=task.spec.metric, held_out_valid=True)


class TDCScores(NamedTuple):
    """A cell's leaderboard metric on the test part and on the held-out valid part."""

    metric: str
    test: float
    valid: float | None  # None: the method returned no validation predictions


def score_tdc(data: TaskData, test_scores: np.ndarray,
              valid_scores: np.ndarray | None) -> TDCScores:
    """The task's metric on the test rows (and on the valid rows, where predicted)."""
    test = tdc_metric(data.metric, data.labels[data.test, 0],
                      np.asarray(test_scores)[:, 0])
    valid = None
    if valid_scores is not None and len(data.valid):
        valid = tdc_metric(data.metric, data.labels[data.valid, 0],
                           np.asarray(valid_scores)[:, 0])
    return TDCScores(data.metric, test, valid)
