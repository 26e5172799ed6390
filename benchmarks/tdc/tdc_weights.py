"""How the estimators should weigh their network and their trees, scored on TDC's held-out
valid parts from the members' outputs of one run.

Each ``exlm_defaults`` cell on a held-out valid part (``exlm-chem benchmark --suite
tdc-admet``, the default ``--fit-on train``) keeps its members' outputs apart in
``OUT/parts/TASK_seedS.npz`` (:func:`exlm_chem.benchmark.encoders.save_parts`): the
network's and the trees' outputs on the valid and test parts, and on the estimator's own
held-out molecules that chose the weight. This script scores weighting rules on those
arrays, without fitting again:

- ``network`` / ``trees``: one member alone (weights 0 and 1);
- ``w=0.5``: the fixed half of 0.3.0-0.4.0's classifier;
- ``w=0.75``: three quarters to the trees (0.5.1's default ``tree_weight``);
- ``chosen``: the weight the estimator chose (``tree_weight=None``, 0.5.0's default);
- ``chosen, AUC`` (classification): the same choice by ROC-AUC of the held-out molecules
  instead of log loss;
- ``w=0.75, logits`` (classification): three quarters to the trees, averaging log-odds
  instead of probabilities;
- ``chosen of 0.75, 1``: the weight the estimator's choice
  (:func:`~exlm_chem.sklearn.ensemble.held_out_tree_weight`) takes from 0.75 and 1 alone
  on the cell's held-out molecules (``tree_weight=(0.75, 1.0)``): the network's quarter
  unless they say the trees do better alone;
- ``chosen of 0.75, 1 past 400, logits`` (classification): that choice, averaging log-odds,
  made only where at least 400 molecules are held out, 0.75 elsewhere;
- ``auto`` (classification): the same where the trees are CatBoost's (at most
  :data:`~exlm_chem.model.frozen_trees.CATBOOST_MAX_TASKS` tasks), the classifier's
  ``tree_weight="auto"`` of 0.5.5 (:func:`~exlm_chem.sklearn.ensemble.resolve_tree_weight`);

and prints, per rule, the mean valid metric per task over the seeds, then per rule its
mean rank among the rules, and for classification and regression apart its mean gain over
the trees alone (per cent of the trees' metric, higher is better for MAE too) and on how
many tasks it is ahead of and behind them. ``--part test`` scores the cells' test parts
instead (TDC's, or the held-out clusters of ``--split cluster``; for reading, not for
choosing). Several folders pool their tasks (a task in more than one: the last folder's
cells).

Usage::

    python benchmarks/tdc/tdc_weights.py benchmarks/results/tdc_admet/records/default-050-valid
    python benchmarks/tdc/tdc_weights.py --part test benchmarks/results/tdc_admet/ood/defaults-*
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def metric_of(task: str) -> str:
    """The task's metric: TDC's (``mae``, ``spearman``, ``roc_auc``, ``prc_auc``); for a
    MoleculeNet task (``exlm-chem benchmark --fit-on train``) ``roc_auc`` or ``rmse``,
    averaged over its sub-tasks as the runner scores it."""
    from exlm_chem.benchmark.tasks import task_type
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    if task in TDC_ADMET_TASKS:
        return TDC_ADMET_TASKS[task].metric
    return "roc_auc" if task_type(task) == "classification" else "rmse"


def score(task: str, labels: np.ndarray, predicted: np.ndarray) -> float:
    """``metric_of(task)`` of ``predicted`` against ``labels`` [n, T] (NaN: missing)."""
    from exlm_chem.benchmark.tdc import tdc_metric
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS
    from exlm_chem.metrics import mean_rmse, mean_roc_auc

    if task in TDC_ADMET_TASKS:
        return tdc_metric(metric_of(task), labels[:, 0], predicted[:, 0])
    mean = mean_roc_auc if metric_of(task) == "roc_auc" else mean_rmse
    return float(mean(labels, predicted).mean)


def _auc_choice(network: np.ndarray, trees: np.ndarray, labels: np.ndarray) -> float:
    """The weight whose mix has the best held-out ROC-AUC (first of equals)."""
    from sklearn.metrics import roc_auc_score

    known = ~np.isnan(labels[:, 0])
    y = labels[known, 0]
    if np.unique(y).size < 2:
        return 0.5
    scores = [roc_auc_score(y, ((1 - w) * network + w * trees)[known, 0]) for w in WEIGHTS]
    return WEIGHTS[int(np.argmax(scores))]


#: rules that average log-odds (classification), not probabilities
LOGIT_RULES = ("w=0.75, logits", "chosen of 0.75, 1 past 400, logits", "auto")
#: the rules every rule's gain is reported against: the trees alone, 0.5.1-0.5.3's
#: classifier (three quarters to the trees, probabilities averaged) and 0.5.4's (log-odds)
BASES = ("trees", "w=0.75", "w=0.75, logits")


def mix(network: np.ndarray, trees: np.ndarray, weight: float, logits: bool) -> np.ndarray:
    """The trees' ``weight`` against the network, averaged as given (probabilities,
    values) or, ``logits``, as log-odds mapped back to probabilities, as the classifier
    mixes them since 0.5.4 (:func:`exlm_chem.sklearn.ensemble.mix`)."""
    if not logits:
        return (1 - weight) * network + weight * trees
    from exlm_chem.sklearn.ensemble import mix as estimators_mix

    return estimators_mix(network, trees, weight, "classification")


def rule_weights(arrays: dict[str, np.ndarray], classification: bool) -> dict[str, float]:
    """Rule -> the trees' weight it gives on this cell (:data:`LOGIT_RULES` average
    log-odds)."""
    from exlm_chem.model.frozen_trees import CATBOOST_MAX_TASKS
    from exlm_chem.sklearn.ensemble import (
        AUTO_MIN_HELD_OUT,
        AUTO_TREE_WEIGHT,
        held_out_tree_weight,
        resolve_tree_weight,
    )

    rules = {"network": 0.0, "trees": 1.0, "w=0.5": 0.5, "w=0.75": 0.75,
             "chosen": float(arrays["chosen_weight"])}
    if classification and arrays["held_out_labels"].shape[1:] == (1,):  # one task
        rules["chosen, AUC"] = _auc_choice(arrays["held_out_network"],
                                           arrays["held_out_trees"],
                                           arrays["held_out_labels"])
    if classification:
        rules["w=0.75, logits"] = 0.75
    # the parts keep what the estimator chose on: probabilities, or values as fit learns them
    rules["chosen of 0.75, 1"] = held_out_tree_weight(
        arrays["held_out_network"], arrays["held_out_trees"], arrays["held_out_labels"],
        "classification" if classification else "regression", (0.75, 1.0))
    if classification:
        held = arrays["held_out_labels"]
        rules["chosen of 0.75, 1 past 400, logits"] = held_out_tree_weight(
            arrays["held_out_network"], arrays["held_out_trees"], held, "classification",
            (0.75, 1.0)) if len(held) >= AUTO_MIN_HELD_OUT else AUTO_TREE_WEIGHT
        booster = "catboost" if held.shape[1] <= CATBOOST_MAX_TASKS else "hist"
        listed = resolve_tree_weight("auto", "classification", booster, len(held))
        rules["auto"] = listed if isinstance(listed, float) else held_out_tree_weight(
            arrays["held_out_network"], arrays["held_out_trees"], held, "classification",
            listed)
    return rules


def score_cells(folder: Path, part: str = "valid") -> dict[str, dict[str, dict[int, float]]]:
    """task -> rule -> seed -> the ``part``'s metric of every parts file under ``folder``."""
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for path in sorted(folder.glob("parts/*_seed*.npz")):
        task, seed = re.fullmatch(r"(.+)_seed(\d+)", path.stem).groups()
        metric = metric_of(task)
        with np.load(path) as stored:
            arrays = {k: stored[k] for k in stored.files}
        for rule, w in rule_weights(arrays, metric in ("roc_auc", "prc_auc")).items():
            mixed = mix(arrays[f"{part}_network"], arrays[f"{part}_trees"], w,
                        rule in LOGIT_RULES)
            out[task][rule][int(seed)] = score(task, arrays[f"{part}_labels"], mixed)
    return out


def table(scores: dict[str, dict[str, dict[int, float]]]) -> list[str]:
    """Markdown: per task the rules' mean metric; then mean ranks, gains over the trees."""
    from scipy.stats import rankdata

    rules = list(dict.fromkeys(r for task in scores.values() for r in task))
    lines = ["| task | metric | seeds | " + " | ".join(rules) + " |",
             "|---|---|---:|" + "---:|" * len(rules)]
    ranks: dict[str, list[float]] = defaultdict(list)
    # (kind, rule, the rule it is set against) -> per task, %
    gains: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for task in sorted(scores):
        metric = metric_of(task)
        sign = -1.0 if metric in ("mae", "rmse") else 1.0
        kind = "regression" if metric in ("mae", "rmse", "spearman") else "classification"
        seeds = sorted(set.intersection(*(set(scores[task][r]) for r in scores[task])))
        means = {r: float(np.mean([scores[task][r][s] for s in seeds]))
                 for r in rules if r in scores[task]}
        names = list(means)
        for r, rank in zip(names, rankdata([-sign * means[r] for r in names]), strict=True):
            ranks[r].append(float(rank))  # equals share their mean rank
            for base in BASES:
                if base in means:
                    gains[kind, r, base].append(
                        100 * sign * (means[r] - means[base]) / abs(means[base]))
        lines.append(f"| {task} | {metric} | {len(seeds)} | "
                     + " | ".join(f"{means[r]:.3f}" if r in means else "–" for r in rules)
                     + " |")
    lines += ["", "| rule | mean rank among the rules | classification: gain over the trees "
              "alone, tasks ahead / behind | regression: the same | classification: gain "
              "over w=0.75 | classification: gain over w=0.75, logits (0.5.4) |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in rules:
        cells = []
        for kind, base in (("classification", "trees"), ("regression", "trees"),
                           ("classification", "w=0.75"),
                           ("classification", "w=0.75, logits")):
            g = np.asarray(gains[kind, r, base])
            cells.append(f"{g.mean():+.2f} %, {(g > 1e-9).sum()} / {(g < -1e-9).sum()} of "
                         f"{g.size}" if g.size else "–")
        lines.append(f"| {r} | {np.mean(ranks[r]):.2f} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+",
                        help="records folders with parts/ (a task in several: the last)")
    parser.add_argument("--part", choices=("valid", "test"), default="valid",
                        help="the part scored (default: valid, what chooses)")
    args = parser.parse_args(argv)
    scores: dict[str, dict[str, dict[int, float]]] = {}
    for folder in args.folders:
        scores.update(score_cells(folder, args.part))
    print("\n".join(table(scores)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
