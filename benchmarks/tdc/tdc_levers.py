"""TDC ADMET levers on the held-out valid parts: what the tree head reads, which booster.

A cheap lever study for the estimators' tree head (:class:`~exlm_chem.model.frozen_trees.
FrozenTrees`), the TDC analogue of ``benchmarks/moleculenet/tree_head.py``: no network is
fine-tuned, and nothing is scored on a test part. For each task of the TDC ADMET group and
each seed, :func:`~exlm_chem.benchmark.tdc.load_tdc_task` re-splits ``train_val`` by
scaffold into train and a held-out valid part; every head is fitted on the train rows and
scored on the valid rows with the task's leaderboard metric
(:func:`~exlm_chem.benchmark.tdc.tdc_metric`: MAE, Spearman, AUROC or AUPRC). The test
part's rows are dropped as soon as a task is loaded: its molecules are never embedded or
featurized and its labels never read.

Per task, computed once and shared by its seeds: the encoder's pooled states of the
``train_val`` molecules (RDKit canonical SMILES, as the estimators read them; the package's
default pooling and layer, via :func:`exlm_chem.embed`; kept in ``OUT/<task>_emb.npz``) and
the raw feature blocks (:func:`exlm_chem.benchmark.features.task_features`, kept under
``--cache``). Heads:

- ``trees(emb+rdkit2d)``, the baseline: 0.4.0's tree head (the estimators'
  ``tree_booster="hist"``, reading :data:`~exlm_chem.model.frozen_trees.HIST_TREE_KINDS`):
  ``FrozenTrees`` with histogram boosting on the states and RDKit 2D, with the random
  forest on the features beside the boosted trees for classification (0.4.0's
  ``tree_forest=None``);
- ``trees(emb+maplight)``: the same head reading MapLight's features (Morgan counts,
  Avalon counts, ErG, RDKit 2D);
- ``trees(maplight)``, ``trees(rdkit2d)``: the same head without the encoder states
  (``states=None``: the trees read the scaled features alone), so
  ``trees(emb+X) - trees(X)`` is what the encoder adds;
- ``catboost(maplight)``: CatBoost at its defaults (``verbose=False``, ``random_seed``
  the TDC seed, ``thread_count`` ``--threads``) on the unscaled MapLight features, as
  MapLight (the leaderboard entry) fits them; ``catboost(emb+maplight)``: with the states
  beside them. Both need ``catboost`` importable (a dependency of the package since
  0.5.0); otherwise they are skipped with one printed line;
- ``kernel(morgan+avalon)``: kernel ridge regression with the Tanimoto similarity of the
  Morgan and Avalon counts (:func:`kernel_predict`), a model of another family than the
  trees to average with them; ``member(maplight) + kernel(morgan+avalon)``, the two
  averaged, and the same ``at 0.2``, the kernel weighing a fifth (:data:`DERIVED`).

Every ``trees`` head is the package's head itself (``FrozenTrees.fit`` with
``booster="hist"``, 0.4.0's booster, which 0.5.0's default CatBoost replaced, and
``decision_of``; no model is needed to score precomputed states, so none is passed),
seeded as an estimator with ``random_state=seed`` seeds it
(:func:`~exlm_chem.data.splits.held_out_split`'s seed, drawn from ``random_state``
alone). The committed records (benchmarks/results/tdc_admet/levers) were made with 0.4.0's
held-out rule (a random share of the rows); 0.5.0's holds out whole scaffolds, and the
seed, all this study takes of it, is the same under both. Unlike the estimator's head it
is fitted on all train rows: the estimator holds out ``validation_fraction`` of them for
its own choices, which this study does not make. The features reach it unscaled
(:func:`~exlm_chem.benchmark.features.task_features`): ``FrozenTrees.fit`` scales them on
the train rows itself.

Regression targets get the regressor's ``target_transform="auto"``
(:mod:`exlm_chem.sklearn.target_transform`, decided on the train rows, as the estimator
decides on the rows it fits): every head, CatBoost too, fits the transformed target and
is scored on y's own scale.

Each (task, seed, head) is one line of ``OUT/results.jsonl`` with its fit's wall and CPU
seconds, commit and machine; a rerun skips what is there. ``--report`` prints per head the
mean validation score of each task over its seeds, the number of tasks where it beats
``trees(emb+rdkit2d)`` (lower MAE is better; over the seeds both have) and its mean
relative change against it (positive: better). One ``--out`` per ``--model``.

``--split cluster`` scores the same heads out of distribution instead: each task's
molecules (train_val and test) split as ``exlm-chem benchmark --suite tdc-admet --split
cluster`` splits them (whole similarity clusters held out, the least like the rest first,
:func:`cluster_part`); the heads fit on the rest and are scored on the held-out clusters
(``"part": "cluster"`` in the records). Its ``--network`` folders are that benchmark's
``exlm_defaults`` records (``benchmarks/results/tdc_admet/ood/defaults-*``), whose parts
hold the network's outputs on the same clusters. One ``--out`` per split.

Usage::

    python benchmarks/tdc/tdc_levers.py --out DIR --cache DIR/features   # 22 tasks, seeds 1-3
    python benchmarks/tdc/tdc_levers.py --tasks dili herg --seeds 1 \
        --heads "trees(emb+rdkit2d)" "trees(rdkit2d)" --out DIR
    python benchmarks/tdc/tdc_levers.py --out DIR --report
    python benchmarks/tdc/tdc_levers.py --out DIR --network RECORDS --report \
        --weights 0.5 0.75 1.0   # the MAE+RMSE member mixed at other shares than 0.75
    python benchmarks/tdc/tdc_levers.py --out OOD --network OOD_RECORDS --report \
        --beside DIR --beside-network RECORDS   # each lever on both studies
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

REPO = Path(__file__).resolve().parents[2]  # benchmarks/<group>/NAME.py
#: MapLight's features, as :data:`exlm_chem.benchmark.features.FEATURE_SETS` names them
MAPLIGHT = ("morgan", "avalon", "erg", "rdkit2d")
BASELINE = "trees(emb+rdkit2d)"
#: the estimators' tree member (the levers' baseline); levers-051's records are 0.5.1's,
#: whose regressor fits MAE alone
MEMBER = "member(maplight)"
SEEDS = (1, 2, 3)
#: the Tanimoto kernel ridge head (:func:`kernel_predict`)
KERNEL = "kernel(morgan+avalon)"
#: its ridge penalties, chosen per fit by the leave-one-out error on the train rows
KERNEL_ALPHAS = tuple(float(a) for a in 10.0 ** np.arange(-2.0, 2.01, 0.5))
_EMB_FORMAT = "tdc-levers-states-1"


class Head(NamedTuple):
    """What a head fits and reads."""

    booster: str  # "trees": the package's FrozenTrees, booster="hist" (0.4.0's head);
    # "catboost": CatBoost at its defaults; "member": the estimators' own tree member
    # (FrozenTrees, booster="catboost": MapLight's settings, standardised MAE regression);
    # "kernel": Tanimoto kernel ridge (kernel_predict)
    states: bool  # the encoder's pooled states beside the features
    kinds: tuple[str, ...]  # feature blocks (exlm_chem.benchmark.features.FEATURE_SETS)
    params: tuple[tuple[str, Any], ...] = ()  # "member": CatBoost settings (tree_params)
    seeds: int = 1  # "member": members of consecutive seeds averaged
    task_type: str | None = None  # fitted on tasks of this type alone (None: every task)


def _heads() -> dict[str, Head]:
    """Every head of :data:`HEADS` by name (imports the package's tree head); the baseline
    reads 0.4.0's tree kinds (the states and RDKit 2D)."""
    from exlm_chem.model.frozen_trees import HIST_TREE_KINDS, STATES_KIND, TREE_KINDS

    return {
        BASELINE: Head("trees", True, tuple(k for k in HIST_TREE_KINDS if k != STATES_KIND)),
        "trees(emb+maplight)": Head("trees", True, MAPLIGHT),
        "trees(maplight)": Head("trees", False, MAPLIGHT),
        "trees(rdkit2d)": Head("trees", False, ("rdkit2d",)),
        "catboost(maplight)": Head("catboost", False, MAPLIGHT),
        "catboost(emb+maplight)": Head("catboost", True, MAPLIGHT),
        # the estimators' own kinds: MapLight's, Morgan folded to 1024 as MapLight folds it
        MEMBER: Head("member", False, TREE_KINDS),
        "member(maplight) x3 seeds": Head("member", False, TREE_KINDS, seeds=3),
        "member(maplight+maccs+atompair)": Head("member", False,
                                                (*TREE_KINDS, "maccs", "atompair")),
        "member(maplight) l2=10": Head("member", False, TREE_KINDS, (("l2_leaf_reg", 10),)),
        "member(maplight) l2=30": Head("member", False, TREE_KINDS, (("l2_leaf_reg", 30),)),
        "member(maplight) depth 8": Head("member", False, TREE_KINDS, (("depth", 8),)),
        # the regressor's trees on squared error instead of MapLight's MAE
        "member(maplight) RMSE": Head("member", False, TREE_KINDS,
                                      (("loss_function", "RMSE"),), task_type="regression"),
        # the classifier's trees with both classes weighed alike, a second model to average
        "member(maplight) balanced": Head("member", False, TREE_KINDS,
                                          (("auto_class_weights", "Balanced"),),
                                          task_type="classification"),
        # twice the trees; CatBoost's automatic learning rate falls with their number
        "member(maplight) 2000 trees": Head("member", False, TREE_KINDS, (("iterations", 2000),)),
        # Mordred's 2D descriptors beside MapLight's (the mordred extra)
        "member(maplight+mordred)": Head("member", False, (*TREE_KINDS, "mordred")),
        # fewer trees, and each split choosing among half the features: the regularisation
        # levers beside l2 and depth
        "member(maplight) 300 trees": Head("member", False, TREE_KINDS, (("iterations", 300),)),
        "member(maplight) rsm=0.5": Head("member", False, TREE_KINDS, (("rsm", 0.5),)),
        # a similarity model beside the trees: Morgan r2 counts at 2048 and Avalon's
        KERNEL: Head("kernel", False, ("morgan", "avalon")),
    }


HEADS = ("trees(emb+rdkit2d)", "trees(emb+maplight)", "trees(maplight)", "trees(rdkit2d)",
         "catboost(maplight)", "catboost(emb+maplight)", "member(maplight)",
         "member(maplight) x3 seeds", "member(maplight+maccs+atompair)",
         "member(maplight) l2=10", "member(maplight) l2=30", "member(maplight) depth 8",
         "member(maplight) RMSE", "member(maplight) balanced", "member(maplight) 2000 trees",
         "member(maplight+mordred)", "member(maplight) 300 trees", "member(maplight) rsm=0.5",
         KERNEL)
#: heads scored from two heads' kept valid predictions averaged, the second weighing the
#: share given, with no fit of their own (needs ``--network``, whose parts hold the
#: labels): the MAE and the RMSE trees, the regressor's tree member from 0.5.3 on
#: (:data:`~exlm_chem.model.catboost_fit.DEFAULT_LOSSES`; averaging predictions is what its
#: merged trees compute)
DERIVED = {"member(maplight) MAE+RMSE": (MEMBER, "member(maplight) RMSE", 0.5),
           "member(maplight) Logloss+balanced": (MEMBER, "member(maplight) balanced", 0.5),
           # a second model reading the pre-trained encoder's pooled states beside the
           # features, averaged with the member (MapLight + GNN reads them in one model)
           "member(maplight) + catboost(emb+maplight)": (MEMBER, "catboost(emb+maplight)",
                                                         0.5),
           # the trees and a model of another family: MapLight + GNN's gain came from one
           f"{MEMBER} + {KERNEL}": (MEMBER, KERNEL, 0.5),
           f"{MEMBER} + {KERNEL} at 0.2": (MEMBER, KERNEL, 0.2)}
#: the lever heads of 0.5.x: the estimators' tree member as it is, then one lever each
MEMBER_HEADS = (*HEADS[6:], "catboost(emb+maplight)", *DERIVED)


def default_tasks(data_path: str | Path | None = None) -> list[str]:
    """The 22 TDC ADMET tasks, fewest ``train_val`` molecules first.

    Parameters
    ----------
    data_path : str, Path or None
        ``admet_group.zip`` or its folder; None: the loader's search order.

    Returns
    -------
    list of str
        Task names ordered by ``train_val`` size.
    """
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS, load_tdc_admet

    sizes = {t: len(load_tdc_admet(t, data_path).train_val.smiles) for t in TDC_ADMET_TASKS}
    return sorted(sizes, key=sizes.__getitem__)


def fit_part(data: Any) -> Any:
    """``data`` (a TDC :class:`~exlm_chem.benchmark.tasks.TaskData`) cut to its
    ``train_val`` rows: train and the held-out valid part, no test rows or labels.

    Parameters
    ----------
    data : TaskData
        As :func:`~exlm_chem.benchmark.tdc.load_tdc_task` returns it (``train_val``
        first, the test part after it).

    Returns
    -------
    TaskData
        The same train and valid rows, an empty test part.
    """
    n = len(data.train) + len(data.valid)
    rows = np.concatenate([data.train, data.valid])
    if not np.array_equal(np.sort(rows), np.arange(n)):
        raise ValueError(f"{data.name}: train and valid are not the first {n} rows")
    return data._replace(smiles=list(data.smiles[:n]), labels=data.labels[:n].copy(),
                         test=np.zeros(0, np.int64))


#: what ``--split`` offers: TDC's per-seed scaffold re-split of train_val (the held-out
#: valid part), or the out-of-distribution split (the held-out clusters)
SPLITS = ("scaffold", "cluster")


def cluster_part(data: Any) -> Any:
    """``data`` (:func:`~exlm_chem.benchmark.tdc.load_tdc_task` with ``cluster=True``)
    with its held-out clusters as the part the heads are scored on (``valid``) and no
    test part: the study reads every head's score from ``valid``."""
    return data._replace(valid=data.test, test=np.zeros(0, np.int64))


def task_part(task: str, seed: int, split: str, data_path: str | Path | None = None) -> Any:
    """One task's rows for ``split`` (:data:`SPLITS`): fitted on ``train``, scored on
    ``valid``, no test part (:func:`fit_part`, :func:`cluster_part`)."""
    from exlm_chem.benchmark.tdc import load_tdc_task

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if split == "cluster":
        return cluster_part(load_tdc_task(task, seed, data_path, cluster=True))
    return fit_part(load_tdc_task(task, seed, data_path))


def _states(data: Any, model: str, out: Path) -> np.ndarray:
    """Pooled encoder states [n, d] of ``data.smiles``, kept in ``OUT/<task>_emb.npz``
    under a key naming the model and the molecules."""
    from exlm_chem import embed
    from exlm_chem.files.safe_write import atomic_path

    key = json.dumps({"format": _EMB_FORMAT, "model": str(model),
                      "smiles_sha256": hashlib.sha256("\n".join(data.smiles).encode()
                                                      ).hexdigest()}, sort_keys=True)
    path = out / f"{data.name}_emb.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) == key:
                return stored["states"]
    states, valid = embed(data.smiles, model=model, device="cpu")
    if not valid.all():
        raise ValueError(f"{data.name}: {int((~valid).sum())} molecules were not embedded")
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, states=states, key=np.array(key))
    return states


def _raw(data: Any, kinds: Sequence[str], cache: Path, n_jobs: int) -> np.ndarray:
    """Unscaled features [n, F] of ``kinds`` side by side (each block cached)."""
    from exlm_chem.benchmark.features import task_features

    return np.concatenate([task_features(data, k, n_jobs=n_jobs, cache_dir=cache)
                           for k in kinds], axis=1)


def _catboost(task: str, seed: int, threads: int) -> Any:
    # CatBoost's defaults, but no catboost_info/ folder in the working directory
    settings = {"random_seed": seed, "verbose": False, "thread_count": threads,
                "allow_writing_files": False}
    if task == "classification":
        from catboost import CatBoostClassifier

        return CatBoostClassifier(**settings)
    from catboost import CatBoostRegressor

    return CatBoostRegressor(**settings)


def target_log(data: Any) -> np.ndarray:
    """Whether the heads fit log(y): [1] bool, the regressor's ``target_transform="auto"``
    decided on ``data.train`` (a classifier's labels: never)."""
    from exlm_chem.sklearn.target_transform import choose_log

    mode = None if data.task_type == "classification" else "auto"
    return choose_log(data.labels[data.train], mode)


def tanimoto(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Tanimoto similarity of count vectors a [n, F] and b [m, F]: a.b / (|a|^2 + |b|^2 -
    a.b), [n, m] (two empty vectors: 0)."""
    dot = a @ b.T  # [n, m]
    norms = np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[None, :]
    return dot / np.maximum(norms - dot, 1e-12)


def kernel_ridge(kernel: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel ridge regression of ``z`` [n] on ``kernel`` [n, n] at the penalty of
    :data:`KERNEL_ALPHAS` whose leave-one-out squared error is least: its dual
    coefficients [n] and its leave-one-out predictions [n]. One eigendecomposition gives
    every penalty's fit and the hat matrix's diagonal, hence the exact leave-one-out
    predictions without refitting."""
    eigenvalues, vectors = np.linalg.eigh(kernel)  # [n], [n, n]
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    projected = vectors.T @ z  # [n]
    alphas = np.asarray(KERNEL_ALPHAS)
    shrink = eigenvalues[:, None] / (eigenvalues[:, None] + alphas[None, :])  # [n, A]
    fitted = vectors @ (shrink * projected[:, None])  # [n, A]
    leverage = (vectors ** 2) @ shrink  # [n, A]: the hat matrix's diagonal per penalty
    loo = z[:, None] - (z[:, None] - fitted) / np.maximum(1.0 - leverage, 1e-9)  # [n, A]
    best = int(np.argmin(((loo - z[:, None]) ** 2).mean(axis=0)))
    return vectors @ (projected / (eigenvalues + alphas[best])), loo[:, best]


def kernel_predict(x_train: np.ndarray, y_train: np.ndarray, x_valid: np.ndarray,
                   classification: bool, log: np.ndarray) -> np.ndarray:
    """Kernel ridge regression with the :func:`tanimoto` kernel, fitted on the train rows.

    The targets are centred and scaled (a classifier's labels as -1 / +1, least-squares
    classification); the ridge penalty is the one of :data:`KERNEL_ALPHAS` with the least
    leave-one-out squared error, exact and cheap from one eigendecomposition of the kernel
    (:func:`kernel_ridge`). A classifier's decision values become probabilities through a
    logistic fit (Platt's) on the leave-one-out decision values.

    Parameters
    ----------
    x_train, x_valid : ndarray [n, F], [m, F]
        Unscaled count features.
    y_train : ndarray [n]
        Labels (0 / 1) or the transformed target.
    classification : bool
        Whether ``y_train`` holds labels.
    log : ndarray [1] of bool
        The regressor's ``target_transform`` (predictions go back to y's scale).

    Returns
    -------
    ndarray [m]
        Positive-class probabilities or values on y's scale.
    """
    from scipy.special import expit

    from exlm_chem.sklearn.target_transform import inverse
    from exlm_chem.uncertainty.calibration import fit_calibrator

    x_train, x_valid = (np.asarray(x, np.float64) for x in (x_train, x_valid))
    y = 2.0 * y_train - 1.0 if classification else np.asarray(y_train, np.float64)
    centre, scale = float(y.mean()), float(y.std()) or 1.0
    dual, loo = kernel_ridge(tanimoto(x_train, x_train), (y - centre) / scale)
    decision = tanimoto(x_valid, x_train) @ dual  # [m]
    if classification:  # the estimators' Platt map, on the decision values as log-odds
        platt = fit_calibrator("platt", y_train[:, None], expit(loo)[:, None])
        return platt.apply(expit(decision)[:, None])[:, 0]
    return inverse((decision * scale + centre)[:, None], log)[:, 0]


def predict_valid(head: Head, data: Any, states: np.ndarray | None, raw: np.ndarray,
                  seed: int, threads: int = 1, first: np.ndarray | None = None
                  ) -> np.ndarray:
    """One head fitted on ``data.train`` and its predictions of ``data.valid``.

    Parameters
    ----------
    head : Head
        What to fit and read.
    data : TaskData
        One task's ``train_val`` rows (:func:`fit_part`), labels [n, 1].
    states : ndarray [n, d] or None
        Pooled encoder states (None: the head reads none).
    raw : ndarray [n, F]
        Unscaled ``head.kinds`` features.
    seed : int
        The TDC seed (the estimators' ``random_state``).
    threads : int
        CatBoost's ``thread_count``.
    first : ndarray [n_valid] or None
        A ``"member"`` head's first member's predictions, when fitted already (the same
        head of one seed): only the further members are fitted.

    Returns
    -------
    ndarray [n_valid]
        Positive-class probabilities (classification) or values on y's scale.
    """
    from scipy.special import expit

    from exlm_chem.data.splits import held_out_split
    from exlm_chem.model.frozen_trees import FrozenTrees
    from exlm_chem.sklearn.target_transform import forward, inverse

    classification = data.task_type == "classification"
    log = target_log(data)
    labels = forward(data.labels, log)  # [n, 1]: what every head fits
    if head.booster == "member":
        drawn = held_out_split([data.smiles[i] for i in data.train], seed, 0.0).seed
        # member k is seeded drawn + k; a first member's outputs fitted already are reused
        outputs = [] if first is None else [first]
        for k in range(len(outputs), head.seeds):
            member = FrozenTrees.fit(None, None, raw, labels, data.train, data.task_type,
                                     drawn + k, head.kinds, forest=False, booster="catboost",
                                     threads=threads, booster_params=dict(head.params))
            decision = member.decision_of(None, raw[data.valid])  # [n_valid, 1]
            outputs.append((expit(decision) if classification
                            else inverse(decision, log))[:, 0])
        return np.mean(outputs, axis=0)  # probabilities or values averaged
    if head.booster == "kernel":
        return kernel_predict(raw[data.train], labels[data.train, 0], raw[data.valid],
                              classification, log)
    if head.booster == "trees":
        # the estimators' seed for random_state=seed (no rows held out: the seed alone)
        drawn = held_out_split([data.smiles[i] for i in data.train], seed, 0.0).seed
        # no model: decision_of scores precomputed states, and fit only keeps the model;
        # 0.4.0's histogram boosting, not 0.5.0's default CatBoost
        trees = FrozenTrees.fit(None, states, raw, labels, data.train, data.task_type, drawn,
                                head.kinds, forest=classification, booster="hist")
        decision = trees.decision_of(None if states is None else states[data.valid],
                                     raw[data.valid])  # [n_valid, 1]
        return (expit(decision) if classification else inverse(decision, log))[:, 0]
    x = raw if states is None else np.concatenate([states, raw], axis=1)
    booster = _catboost(data.task_type, seed, threads)
    if classification:
        booster.fit(x[data.train], labels[data.train, 0].astype(np.int64))
        return booster.predict_proba(x[data.valid])[:, 1]
    booster.fit(x[data.train], labels[data.train, 0])
    return inverse(booster.predict(x[data.valid])[:, None], log)[:, 0]


def _done(results: Path) -> set[tuple[str, int, str]]:
    if not results.is_file():
        return set()
    return {(r["task"], r["seed"], r["head"])
            for r in map(json.loads, results.read_text().splitlines())}


def _predictions_path(out: Path, task: str, seed: int) -> Path:
    return out / "predictions" / f"{task}_seed{seed}.npz"


def _keep_predictions(out: Path, task: str, seed: int, head: str,
                      predicted: np.ndarray) -> None:
    """Add ``head``'s valid predictions to ``OUT/predictions/TASK_seedS.npz`` (atomic)."""
    from exlm_chem.files.safe_write import atomic_path

    path = _predictions_path(out, task, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {}
    if path.is_file():
        with np.load(path, allow_pickle=False) as stored:
            kept = {k: stored[k] for k in stored.files}
    kept[head] = np.asarray(predicted, np.float64)
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **kept)


def _score(name: str, head: Head, data: Any, states: np.ndarray | None, seed: int,
           cache: Path, threads: int, out: Path, split: str = "scaffold") -> dict[str, Any]:
    """One (task, seed, head)'s record without provenance: the validation score and the
    fit's wall and CPU seconds (features and states computed before the clock starts)."""
    from exlm_chem.benchmark.tdc import TDC_CLUSTER_SPLIT, TDC_SPLIT, tdc_metric

    began = time.perf_counter()
    raw = _raw(data, head.kinds, cache, threads)
    if time.perf_counter() - began >= 1:
        print(f"{data.name}: features {'+'.join(head.kinds)} "
              f"{time.perf_counter() - began:.0f} s", flush=True)
    first = None
    if head.booster == "member" and head.seeds > 1:
        one = next((n for n, h in _heads().items() if h == head._replace(seeds=1)), None)
        path = _predictions_path(out, data.name, seed)
        if one is not None and path.is_file():
            with np.load(path, allow_pickle=False) as stored:
                first = stored[one] if one in stored.files else None
    began, cpu = time.perf_counter(), time.process_time()
    predicted = predict_valid(head, data, states if head.states else None, raw, seed, threads,
                              first)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    _keep_predictions(out, data.name, seed, name, predicted)
    return {"task": data.name, "seed": seed, "head": name, "metric": data.metric,
            "valid_score": tdc_metric(data.metric, data.labels[data.valid, 0], predicted),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "booster": head.booster,
            "reused_first_member": first is not None,  # its time is the base head's
            "states": head.states, "features": list(head.kinds),
            "target_log": bool(target_log(data)[0]), "n_train": len(data.train),
            "n_valid": len(data.valid),
            "split": TDC_CLUSTER_SPLIT if split == "cluster" else TDC_SPLIT,
            "part": "cluster" if split == "cluster" else "valid",
            "data_sha256": data.data_sha256}


def run(tasks: Sequence[str], seeds: Sequence[int], model: str, out: Path,
        heads: Sequence[str] = HEADS, cache: Path | None = None, threads: int = 1,
        data_path: str | Path | None = None, split: str = "scaffold") -> list[dict[str, Any]]:
    """Fit and score every (task, seed, head) not in ``OUT/results.jsonl`` yet.

    Parameters
    ----------
    tasks : sequence of str
        TDC ADMET task names.
    seeds : sequence of int
        TDC seeds (the scaffold re-split of ``train_val`` and the heads' seeds).
    model : str
        The encoder's checkpoint directory.
    out : Path
        Where ``results.jsonl`` and the states are kept.
    heads : sequence of str
        Names of :data:`HEADS`.
    cache : Path or None
        Folder for the raw feature blocks (default: ``out``).
    threads : int
        Feature processes, OpenMP threads of the boosted trees and CatBoost's threads.
    data_path : str, Path or None
        ``admet_group.zip`` or its folder (None: the loader's search order).
    split : str
        One of :data:`SPLITS` (:func:`task_part`).

    Returns
    -------
    list of dict
        The records written by this call.
    """
    from threadpoolctl import threadpool_limits

    from exlm_chem.benchmark.tasks import task_type, with_canonical_smiles
    from exlm_chem.benchmark.tdc import METRIC_TITLES
    from exlm_chem.provenance import git_commit, machine

    specs = _heads()
    unknown = [h for h in heads if h not in specs]
    if unknown:
        raise ValueError(f"unknown heads {unknown}; choose from {list(HEADS)}")
    heads = list(heads)
    if any(specs[h].booster == "catboost" for h in heads):
        try:
            import catboost  # noqa: F401
        except ImportError:
            skipped = [h for h in heads if specs[h].booster == "catboost"]
            print(f"catboost is not importable: skipping {', '.join(skipped)}", flush=True)
            heads = [h for h in heads if h not in skipped]
    out.mkdir(parents=True, exist_ok=True)
    cache = out if cache is None else cache
    cache.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = _done(results)
    provenance = {"commit": git_commit(), "machine": machine()}
    written = []
    with threadpool_limits(limits=threads):
        for task in tasks:
            kind = task_type(task)
            fits = [h for h in heads if specs[h].task_type in (None, kind)]
            todo = {s: [h for h in fits if (task, s, h) not in done] for s in seeds}
            if not any(todo.values()):
                continue
            canonical = None  # the task's rows are the same for every seed
            states = None
            for seed in seeds:
                if not todo[seed]:
                    continue
                data = task_part(task, seed, split, data_path)
                if canonical is None:
                    canonical = with_canonical_smiles(data).smiles
                    print(f"{task}: {len(canonical)} molecules", flush=True)
                data = data._replace(smiles=canonical)
                for head in todo[seed]:
                    if specs[head].states and states is None:
                        began = time.perf_counter()
                        states = _states(data, model, out)
                        print(f"{task}: states {time.perf_counter() - began:.0f} s", flush=True)
                    record = {**_score(head, specs[head], data, states, seed, cache, threads,
                                       out, split),
                              "model": model, **provenance,
                              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                           time.gmtime())}
                    with open(results, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(record) + "\n")
                    written.append(record)
                    print(f"{task} seed {seed} {head}: {METRIC_TITLES[data.metric]} "
                          f"{record['valid_score']:.3f} ({record['wall_s']:.0f} s)", flush=True)
    return written


def _gain(metric: str, value: float, baseline: float) -> float:
    """Relative change of ``value`` against ``baseline``, positive when better."""
    change = (value - baseline) / abs(baseline) if baseline else float("nan")
    return -change if metric == "mae" else change


def report(out: Path) -> str:
    """The markdown table of ``OUT/results.jsonl`` (see the module docstring).

    Parameters
    ----------
    out : Path
        The study's folder.

    Returns
    -------
    str
        One row per head: each task's mean validation score over its seeds, the tasks
        where it beats :data:`BASELINE` and its mean relative change (positive: better).
    """
    from exlm_chem.benchmark.tdc import METRIC_TITLES

    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    scores: dict[tuple[str, str], dict[int, float]] = {}
    metrics: dict[str, str] = {}
    for r in records:
        scores.setdefault((r["task"], r["head"]), {})[r["seed"]] = r["valid_score"]
        metrics[r["task"]] = r["metric"]
    tasks = list(metrics)
    lines = ["| head | " + " | ".join(f"{t} ({METRIC_TITLES[metrics[t]]})" for t in tasks)
             + f" | beats {BASELINE} | mean rel. change |",
             "|---|" + "---:|" * (len(tasks) + 2)]
    for head in [h for h in HEADS if any(r["head"] == h for r in records)]:
        shown, beats, gains = [], 0, []
        for t in tasks:
            own = scores.get((t, head), {})
            shown.append(f"{np.mean(list(own.values())):.3f}" if own else "–")
            base = scores.get((t, BASELINE), {})
            common = sorted(set(own) & set(base))
            if head == BASELINE or not common:
                continue
            value, reference = (float(np.mean([d[s] for s in common])) for d in (own, base))
            better = value < reference if metrics[t] == "mae" else value > reference
            beats += int(better)
            gains.append(_gain(metrics[t], value, reference))
        summary = (["–", "–"] if head == BASELINE or not gains
                   else [f"{beats}/{len(gains)}", f"{100 * np.nanmean(gains):+.1f}%"])
        lines.append(f"| {head} | " + " | ".join(shown + summary) + " |")
    return "\n".join(lines)


def _member_cells(out: Path, network: Sequence[Path] | None, weight: float
                  ) -> tuple[dict[tuple[str, str, str], dict[int, float]], dict[str, str], float]:
    """Valid scores of :data:`MEMBER_HEADS` per (task, head, "alone" / "mixed") and seed,
    each task's metric, and the largest gap between :data:`MEMBER`'s outputs and the
    estimators' trees in the ``network`` folders' parts (see :func:`member_report`; a
    task's parts are read from the first folder that has them)."""
    from exlm_chem.benchmark.tdc import tdc_metric
    from exlm_chem.sklearn.ensemble import mix

    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    metric = {r["task"]: r["metric"] for r in records}
    cells: dict[tuple[str, str, str], dict[int, float]] = {}  # (task, head, how) -> seed
    differs = 0.0

    for r in records:
        if r["head"] not in MEMBER_HEADS:
            continue
        cells.setdefault((r["task"], r["head"], "alone"), {})[r["seed"]] = r["valid_score"]
        if not network:
            continue
        name = f"{r['task']}_seed{r['seed']}.npz"
        parts = next((f / "parts" / name for f in network if (f / "parts" / name).is_file()),
                     None)
        if parts is None:
            continue
        # the benchmark's parts keep the held-out clusters as their test part
        at = "test" if r.get("part") == "cluster" else "valid"
        with np.load(parts) as stored, np.load(_predictions_path(out, r["task"], r["seed"])
                                               ) as mine:
            labels, net = stored[f"{at}_labels"][:, 0], stored[f"{at}_network"][:, 0]
            trees = stored[f"{at}_trees"][:, 0] if f"{at}_trees" in stored.files else None
            kept = {name: mine[name] for name in mine.files}
            own = kept[r["head"]]
        if labels.shape != own.shape:
            raise ValueError(f"{parts}: {labels.size} valid rows, the study has {own.size}")
        if r["head"] == MEMBER and trees is not None:
            # the study's member is the estimators' own: the same outputs
            differs = max(differs, float(np.abs(trees - own).max()))
        task = "classification" if r["metric"] in ("roc_auc", "prc_auc") else "regression"
        scored = {r["head"]: own}
        for name, (first, second, share) in DERIVED.items():
            if r["head"] == second and first in kept:
                # the two models' raw scores averaged, the second weighing ``share``
                # (ObliviousTrees.mean_of at 0.5): the mean of values, of log-odds
                scored[name] = mix(kept[first], own, share, task)
                cells.setdefault((r["task"], name, "alone"), {})[r["seed"]] = tdc_metric(
                    r["metric"], labels, scored[name])
        for name, values in scored.items():
            # as the estimators mix their network and their trees
            cells.setdefault((r["task"], name, "mixed"), {})[r["seed"]] = tdc_metric(
                r["metric"], labels, mix(net, values, weight, task))
    return cells, metric, differs


def _paired(cells: dict[tuple[str, str, str], dict[int, float]],
            base_cells: dict[tuple[str, str, str], dict[int, float]], metric: dict[str, str],
            task: str, own: tuple[str, str], base: tuple[str, str]
            ) -> tuple[float, float, int] | None:
    """``own`` = (head, how) in ``cells`` and ``base`` in ``base_cells`` on ``task``, each
    averaged over the seeds both have: ``own``'s mean, its relative change against
    ``base``'s (positive: better) and the seeds; None where they share no seed."""
    mine, theirs = cells.get((task, *own), {}), base_cells.get((task, *base), {})
    common = sorted(set(mine) & set(theirs))
    if not common:
        return None
    value, reference = (float(np.mean([d[s] for s in common])) for d in (mine, theirs))
    return value, _gain(metric[task], value, reference), len(common)


def _change(cells: dict[tuple[str, str, str], dict[int, float]],
            base_cells: dict[tuple[str, str, str], dict[int, float]], metric: dict[str, str],
            own: tuple[str, str], base: tuple[str, str]) -> str:
    """Mean relative change of ``own`` = (head, how) in ``cells`` against ``base`` in
    ``base_cells`` over the tasks, and the tasks ahead / behind, on the seeds both have."""
    pairs = [_paired(cells, base_cells, metric, t, own, base) for t in sorted(metric)]
    gains = [gain for _, gain, _ in filter(None, pairs)]
    ahead, behind = sum(g > 1e-9 for g in gains), sum(g < -1e-9 for g in gains)
    return (f"{100 * np.mean(gains):+.2f} %, {ahead} / {behind} of {len(gains)}"
            if gains else "–")


def member_report(out: Path, network: Sequence[Path] | None, weight: float = 0.75) -> str:
    """The levers of :data:`MEMBER_HEADS` against :data:`MEMBER` (the estimators' tree
    member; :data:`DERIVED` heads only with ``network``).

    Each head's valid scores alone and, with ``network`` (a ``exlm-chem benchmark
    --suite tdc-admet`` records folder whose ``parts/`` hold the fine-tuned network's
    outputs on the same valid parts), averaged with the network at the estimators'
    ``tree_weight`` (``weight``). First per head its mean relative change against
    :data:`MEMBER` (positive: better) and the tasks where it is ahead / behind; then per
    task its mean and that change. Every comparison pairs the (task, seed) cells both
    heads have.

    Parameters
    ----------
    out : Path
        The study's folder (``predictions/``, ``results.jsonl``).
    network : sequence of Path or None
        The records folders with the network's ``parts/`` (None: the heads alone).
    weight : float
        The trees' share of the average.

    Returns
    -------
    str
        Markdown.
    """
    cells, metric, differs = _member_cells(out, network, weight)
    hows = ("alone", "mixed") if network else ("alone",)
    heads = [h for h in MEMBER_HEADS if any(k[1] == h for k in cells)]
    tasks = sorted({k[0] for k in cells})
    lines = ["| head | " + " | ".join(f"{how}: mean change vs {MEMBER}, ahead / behind"
                                     for how in hows) + " | cells |",
             "|---|" + "---:|" * (len(hows) + 1)]
    for head in heads:
        n_cells = sum(len(set(cells.get((t, head, "alone"), {}))
                          & set(cells.get((t, MEMBER, "alone"), {}))) for t in tasks)
        shown = [_change(cells, cells, metric, (head, how), (MEMBER, how)) for how in hows]
        lines.append(f"| {head} | " + " | ".join(shown) + f" | {n_cells} |")
    # per task, each head beside the member on the seeds both have: heads ran on
    # different seeds, and a seed moves a small set's score more than most levers do
    lines += ["", f"Per task: {MEMBER} over its seeds; every other head over the seeds it "
                  f"shares with {MEMBER}, its change against {MEMBER} on those seeds and "
                  "their number in brackets.",
              "", "| task | metric | " + " | ".join(f"{h} ({how})" for h in heads
                                                    for how in hows) + " |",
              "|---|---|" + "---:|" * (len(heads) * len(hows))]
    for t in tasks:
        shown = []
        for head in heads:
            for how in hows:
                if head == MEMBER:
                    own = cells.get((t, head, how), {})
                    shown.append(f"{np.mean(list(own.values())):.3f}" if own else "–")
                    continue
                pair = _paired(cells, cells, metric, t, (head, how), (MEMBER, how))
                shown.append("–" if pair is None
                             else f"{pair[0]:.3f} ({100 * pair[1]:+.1f} %, {pair[2]})")
        lines.append(f"| {t} | {metric[t]} | " + " | ".join(shown) + " |")
    if network:
        lines += ["", f"{MEMBER} against the estimators' trees in the parts of "
                      f"{', '.join(map(str, network))}: largest difference {differs:.2g}"]
    return "\n".join(lines)


def _study_split(out: Path) -> str:
    """The part a study's records score: "cluster" or "scaffold" (records before the
    cluster split have no ``part``)."""
    with (out / "results.jsonl").open() as lines:
        first = json.loads(next(lines))
    return "cluster" if first.get("part") == "cluster" else "scaffold"


def beside_report(sides: Sequence[tuple[str, Path, Sequence[Path] | None]],
                  weight: float = 0.75) -> str:
    """Each lever of :data:`MEMBER_HEADS` against :data:`MEMBER` in several studies side by
    side, e.g. the held-out clusters (``--split cluster``) beside TDC's valid parts.

    Each study's changes are those of :func:`member_report` (alone and, with a network,
    mixed at ``weight``), over the tasks every study has and, within a study, the seeds a
    head shares with :data:`MEMBER` there.

    Parameters
    ----------
    sides : sequence of (str, Path, sequence of Path or None)
        Per study its name in the header, its folder and its network's records folders.
    weight : float
        The trees' share of the average.

    Returns
    -------
    str
        Markdown: one row per head that any study has.
    """
    studies = [(name, *_member_cells(out, network, weight)[:2], bool(network))
               for name, out, network in sides]
    tasks = set.intersection(*(set(metric) for _, _, metric, _ in studies))
    columns = [(name, cells, {t: m for t, m in metric.items() if t in tasks}, how)
               for name, cells, metric, mixed in studies
               for how in (("alone", "mixed") if mixed else ("alone",))]
    heads = [h for h in MEMBER_HEADS if h != MEMBER
             and any(k[1] == h and k[0] in tasks for _, cells, _, _ in columns for k in cells)]
    lines = [f"{len(tasks)} tasks: {', '.join(sorted(tasks))}. Each cell: mean relative change "
             f"against {MEMBER} (positive: better), tasks ahead / behind.", "",
             "| head | " + " | ".join(f"{name}: {how}" for name, _, _, how in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for head in heads:
        shown = [_change(cells, cells, metric, (head, how), (MEMBER, how))
                 for _, cells, metric, how in columns]
        lines.append(f"| {head} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def weight_report(out: Path, network: Sequence[Path], head: str, weights: Sequence[float],
                  reference: float = 0.75) -> str:
    """``head`` averaged with the network at each of ``weights`` (the trees' share) against
    the same average at ``reference``: mean relative change over the tasks (positive:
    better than ``reference``), tasks ahead / behind, on the valid parts.

    Parameters
    ----------
    out, network : Path, sequence of Path
        As :func:`member_report` (``network`` required: the weights mix its outputs).
    head : str
        One of :data:`MEMBER_HEADS`.
    weights : sequence of float
        The trees' shares to compare.
    reference : float
        The share they are compared against (the estimators' default).

    Returns
    -------
    str
        Markdown.
    """
    base, metric, _ = _member_cells(out, network, reference)
    lines = [f"| {head}: trees' share | mixed: mean change vs {reference}, ahead / behind |",
             "|---:|---:|"]
    for weight in weights:
        cells = _member_cells(out, network, weight)[0]
        lines.append(f"| {weight:g} | "
                     f"{_change(cells, base, metric, (head, 'mixed'), (head, 'mixed'))} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=list(TDC_ADMET_TASKS), default=None,
                        help="default: all 22, fewest train_val molecules first")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--heads", nargs="+", choices=HEADS, default=list(HEADS))
    parser.add_argument("--model", default=str(REPO / "models" / "exlm-small"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder for the raw feature blocks (default: --out)")
    parser.add_argument("--data", default=None,
                        help="admet_group.zip or its folder (default: the loader's search)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="only print the table")
    parser.add_argument("--split", choices=SPLITS, default="scaffold",
                        help="scaffold: TDC's valid parts (default); cluster: the held-out "
                             "similarity clusters of the out-of-distribution benchmark")
    parser.add_argument("--network", type=Path, nargs="+", default=None,
                        help="records folders whose parts/ hold the network's outputs on "
                             "the same parts: the member levers are also scored averaged "
                             "with it")
    parser.add_argument("--weights", nargs="+", type=float, default=None,
                        help="with --network: also the MAE+RMSE member averaged with the "
                             "network at these shares of the trees, against 0.75")
    parser.add_argument("--beside", type=Path, default=None,
                        help="another study's folder (e.g. --split scaffold's): each "
                             "member lever's change here and there, side by side")
    parser.add_argument("--beside-network", type=Path, nargs="+", default=None,
                        help="with --beside: the network's records folders of that study")
    args = parser.parse_args(argv)
    if not args.report:
        from exlm_chem.threads import set_threads

        set_threads(args.threads)
        tasks = args.tasks or default_tasks(args.data)
        run(tasks, args.seeds, args.model, args.out, tuple(args.heads), args.cache,
            args.threads, args.data, args.split)
    print(report(args.out))
    if any(json.loads(line)["head"] in MEMBER_HEADS
           for line in (args.out / "results.jsonl").read_text().splitlines()):
        print()
        print(member_report(args.out, args.network))
    if args.weights and args.network:
        print()
        print(weight_report(args.out, args.network, next(iter(DERIVED)), args.weights))
    if args.beside:
        split = _study_split(args.out)
        print()
        print(beside_report([(split, args.out, args.network),
                             (_study_split(args.beside), args.beside, args.beside_network)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
