"""Tree heads on per-molecule feature vectors, one set of trees per task, stored as arrays.

:meth:`TreeHead.fit` fits one scikit-learn histogram gradient-boosting model per task
(:class:`~sklearn.ensemble.HistGradientBoostingClassifier` for 0/1 labels,
:class:`~sklearn.ensemble.HistGradientBoostingRegressor` for values) and keeps only what
prediction needs: each task's trees as a :class:`~exlm_chem.model.task_trees.TaskTrees`,
numeric node arrays and the model's baseline. Those arrays (:meth:`TreeHead.arrays`) are
what gets saved, in a safetensors file beside the weights, and :meth:`TreeHead.decision`
walks them with numpy. Loading a head therefore never unpickles (a pickled estimator can
run any code when it is loaded) and never needs the scikit-learn version that fitted it.

:class:`ForestHead` keeps a scikit-learn :class:`~sklearn.ensemble.RandomForestClassifier`
per task in the same arrays (a leaf's value: its positive share over the number of trees);
it rounds rows to float32 before the walk, as scikit-learn's trees read them.

:class:`BoostedHead` keeps CatBoost per task (MapLight's, :mod:`~exlm_chem.model.catboost_fit`)
as the arrays of :mod:`exlm_chem.model.oblivious_trees`: CatBoost is needed only to fit.

Shapes: N rows, F features, T tasks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exlm_chem.model import oblivious_trees, task_trees
from exlm_chem.model.catboost_fit import fit_catboost
from exlm_chem.model.oblivious_trees import ObliviousTrees
from exlm_chem.model.task_trees import TaskTrees

__all__ = ["BOOSTERS", "FOREST_SETTINGS", "TASKS", "BoostedHead", "ForestHead", "TreeHead"]

#: the tree head's boosters: CatBoost (:class:`BoostedHead`, MapLight's), scikit-learn's
#: histogram gradient boosting (:class:`TreeHead`)
BOOSTERS = ("catboost", "hist")

TASKS = ("classification", "regression")
# the positive share of a one-class classification task is clipped to this before its
# log-odds are taken, so that a task never seen negative still scores a finite logit
_CONSTANT_CLIP = 1e-3
#: each task's random forest: the benchmark runner's ``rf_rdkit2d``
#: (:class:`exlm_chem.benchmark.rf.RandomForestSettings`, a layer this one may not import)
FOREST_SETTINGS = {"n_estimators": 100, "class_weight": "balanced", "min_samples_leaf": 1}


class _TasksHead:
    """What both heads are: one :class:`TaskTrees` per task, all on F features."""

    trees: list[TaskTrees]

    @property
    def n_tasks(self) -> int:
        """Tasks T (the heads' output columns)."""
        return len(self.trees)

    @property
    def n_features(self) -> int:
        """Features F each row must have."""
        return self.trees[0].n_features


class TreeHead(_TasksHead):
    """Gradient-boosted trees per task, predicted from plain arrays.

    Parameters
    ----------
    task : {"classification", "regression"}
        ``classification``: 0/1 labels, raw scores are logits; ``regression``: values.
    trees : list of TaskTrees
        One per task, all fitted on the same number of features.
    """

    booster = "hist"

    def __init__(self, task: str, trees: list[TaskTrees]) -> None:
        if task not in TASKS:
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        self.task = task
        self.trees = _checked_tasks(trees, TaskTrees)

    @classmethod
    def fit(cls, x: np.ndarray, labels: np.ndarray, task: str, seed: int) -> TreeHead:
        """Fit one gradient-boosting model per task column at scikit-learn's defaults.

        Parameters
        ----------
        x : ndarray [N, F] float
            Feature rows; NaN is a missing feature (the trees learn where it goes).
        labels : ndarray [N, T] float
            NaN: unknown label; each task is fitted on its known rows only. 0/1 for
            classification.
        task : {"classification", "regression"}
        seed : int
            Task ``t`` is fitted with ``random_state = seed + 1000 * t``, so tasks do not
            share a random stream (it matters only above 10,000 rows, where the estimators
            early-stop on a random validation share).

        Returns
        -------
        TreeHead
            A classification task whose known labels hold one class (or none) gets no
            trees and scores the log-odds of its positive share, clipped to
            [1e-3, 1 - 1e-3] (0 with no labels): a booster cannot fit one class. A
            regression task with no labelled rows scores 0.
        """
        if task not in TASKS:
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        x, labels = _fit_rows(x, labels)
        # imported here: loading and predicting a saved head need numpy alone
        from sklearn.ensemble import (
            HistGradientBoostingClassifier,
            HistGradientBoostingRegressor,
        )

        n_features = x.shape[1]
        trees = []
        for t in range(labels.shape[1]):
            known = ~np.isnan(labels[:, t])
            y = labels[known, t]
            random_state = seed + 1000 * t
            if task == "classification":
                _check_binary(y, t)
                if np.unique(y).size < 2:
                    trees.append(TaskTrees.constant(n_features, _constant_logit(y)))
                    continue
                model = HistGradientBoostingClassifier(random_state=random_state)
                model.fit(x[known], y.astype(np.int64))
            else:
                if y.size == 0:
                    trees.append(TaskTrees.constant(n_features, 0.0))
                    continue
                model = HistGradientBoostingRegressor(random_state=random_state)
                model.fit(x[known], y)
            trees.append(TaskTrees.from_estimator(model, n_features))
        return cls(task, trees)

    def decision(self, x: np.ndarray) -> np.ndarray:
        """Raw scores [N, T] float64 of rows ``x`` [N, F]: logits for classification
        (scikit-learn's binary ``decision_function``), values for regression (its
        ``predict``)."""
        x = _as_rows(x, self.n_features)
        return np.stack([t.decision(x) for t in self.trees], axis=1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything :meth:`from_arrays` needs, as contiguous numeric arrays.

        Keys: ``n_tasks``, ``n_features`` and ``classification`` (int64 scalars), then per
        task ``t``: ``t{t}.feature``, ``t{t}.threshold``, ``t{t}.missing_left``,
        ``t{t}.left``, ``t{t}.right``, ``t{t}.value``, ``t{t}.is_leaf``,
        ``t{t}.tree_start`` and ``t{t}.baseline`` (the fields of :class:`TaskTrees`).
        """
        # "classification" lets from_arrays catch a head loaded under the other task
        return _tasks_arrays(self.trees, classification=int(self.task == "classification"))

    @classmethod
    def from_arrays(cls, task: str, arrays: dict[str, np.ndarray]) -> TreeHead:
        """The head :meth:`arrays` described (checked: a ValueError names what is wrong)."""
        _check_stored_task(arrays, task)
        return cls(task, _tasks_from(arrays, TaskTrees, "classification"))


class ForestHead(_TasksHead):
    """A random forest per classification task, predicted from plain arrays.

    Each task's trees are a :class:`TaskTrees` whose raw score is the forest's
    positive-class probability (see :meth:`TaskTrees.from_forest`).

    Parameters
    ----------
    trees : list of TaskTrees
        One per task, all fitted on the same number of features.
    """

    def __init__(self, trees: list[TaskTrees]) -> None:
        self.trees = _checked_tasks(trees, TaskTrees)

    @classmethod
    def fit(cls, x: np.ndarray, labels: np.ndarray, seed: int) -> ForestHead:
        """Fit one ``RandomForestClassifier`` (:data:`FOREST_SETTINGS`) per task column.

        Parameters
        ----------
        x : ndarray [N, F] float
            Feature rows; NaN is a missing feature (scikit-learn >= 1.4).
        labels : ndarray [N, T] float
            0/1, NaN: unknown label; each task is fitted on its known rows only.
        seed : int
            Task ``t`` is fitted with ``random_state = seed + 1000 * t``, as the boosted
            trees and the benchmark runner's forests are.

        Returns
        -------
        ForestHead
            A task whose known labels hold one class (or none) gets no trees and scores
            its positive share clipped to [1e-3, 1 - 1e-3] (0.5 with no labels): the
            probability of the boosted trees' constant logit (:meth:`TreeHead.fit`).
        """
        x, labels = _fit_rows(x, labels)
        # imported here: loading and predicting a saved forest need numpy alone
        from sklearn.ensemble import RandomForestClassifier

        n_features = x.shape[1]
        trees = []
        for t in range(labels.shape[1]):
            known = ~np.isnan(labels[:, t])
            y = labels[known, t]
            _check_binary(y, t)
            if np.unique(y).size < 2:
                trees.append(TaskTrees.constant(n_features, _constant_share(y)))
                continue
            model = RandomForestClassifier(random_state=seed + 1000 * t, n_jobs=1,
                                           **FOREST_SETTINGS)
            model.fit(x[known], y.astype(np.int64))
            trees.append(TaskTrees.from_forest(model, n_features))
        return cls(trees)

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Positive-class probabilities [N, T] float64 of rows ``x`` [N, F]: each task's
        ``predict_proba[:, 1]``."""
        x = _as_rows(x, self.n_features)
        # scikit-learn's trees read float32 rows and place thresholds between float32
        # values: a float64 value just past one would go the other way unless rounded
        with np.errstate(over="ignore"):  # beyond float32's range: +-inf, as the rule has it
            x = x.astype(np.float32).astype(np.float64)
        return np.stack([t.decision(x) for t in self.trees], axis=1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything :meth:`from_arrays` needs, as contiguous numeric arrays: the keys of
        :meth:`TreeHead.arrays` with ``forest`` (1) in place of ``classification``."""
        # "forest" keeps boosted trees and a forest from being loaded as each other
        return _tasks_arrays(self.trees, forest=1)

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ForestHead:
        """The forest :meth:`arrays` described (checked: a ValueError names what is wrong)."""
        if _scalar(arrays, "forest") != 1:
            raise ValueError(f"tree head array 'forest' must be 1, got {arrays['forest']!r}")
        return cls(_tasks_from(arrays, TaskTrees, "forest"))


class BoostedHead(_TasksHead):
    """CatBoost per task, predicted from plain arrays (:class:`ObliviousTrees`).

    Parameters
    ----------
    task : {"classification", "regression"}
        ``classification``: 0/1 labels, raw scores are logits; ``regression``: values.
    trees : list of ObliviousTrees
        One per task, all fitted on the same number of features.
    """

    booster = "catboost"

    def __init__(self, task: str, trees: list[ObliviousTrees]) -> None:
        if task not in TASKS:
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        self.task = task
        self.trees = _checked_tasks(trees, ObliviousTrees)

    @classmethod
    def fit(cls, x: np.ndarray, labels: np.ndarray, task: str, seed: int,
            threads: int = 1, params: dict[str, Any] | None = None) -> BoostedHead:
        """One :func:`~exlm_chem.model.catboost_fit.fit_catboost` per task column.

        Parameters
        ----------
        x : ndarray [N, F] float
            Raw feature rows (CatBoost bins them itself); NaN sorts below every border.
        labels : ndarray [N, T] float
            NaN: unknown label; each task is fitted on its known rows only. 0/1 for
            classification; regression values are standardised on the task's rows, as
            MapLight fits them, the scale folded back into the trees (losses:
            :data:`~exlm_chem.model.catboost_fit.DEFAULT_LOSSES`).
        task : {"classification", "regression"}
        seed : int
            Task ``t`` is fitted with ``random_seed = seed + 1000 * t``.
        threads : int
            CatBoost's threads.
        params : dict, optional
            CatBoost parameters beside MapLight's (``{"iterations": 300}``).

        Returns
        -------
        BoostedHead
            Constant tasks as :meth:`TreeHead.fit`'s (one class: the log-odds of its
            clipped share); a regression task with no rows scores 0, one of one value it.
        """
        if task not in TASKS:  # before any fit
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        x, labels = _fit_rows(x, labels)
        params = dict(params or {})
        n_features = x.shape[1]
        trees = []
        for t in range(labels.shape[1]):
            known = ~np.isnan(labels[:, t])
            y = labels[known, t]
            seed_t = seed + 1000 * t
            if task == "classification":
                _check_binary(y, t)
                if np.unique(y).size < 2:
                    trees.append(ObliviousTrees.constant(n_features, _constant_logit(y)))
                    continue
                trees.append(fit_catboost(x[known], y, task, seed_t, threads, **params))
                continue
            if y.size == 0 or np.ptp(y) == 0:
                trees.append(ObliviousTrees.constant(n_features, y[0] if y.size else 0.0))
                continue
            mean, sd = float(y.mean()), float(y.std())
            fitted = fit_catboost(x[known], (y - mean) / sd, task, seed_t, threads, **params)
            # value = sd * (scale * leaves + bias) + mean
            trees.append(fitted._replace(scale=fitted.scale * sd,
                                         bias=fitted.bias * sd + mean))
        return cls(task, trees)

    def decision(self, x: np.ndarray) -> np.ndarray:
        """Raw scores [N, T] float64 (CatBoost's ``RawFormulaVal``) of raw rows ``x``."""
        x = _as_rows(x, self.n_features)
        return np.stack([t.decision(x) for t in self.trees], axis=1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything :meth:`from_arrays` needs: :meth:`TreeHead.arrays`'s keys with
        ``catboost`` (1), which keeps either head from loading as the other, and each
        task's :data:`~exlm_chem.model.oblivious_trees.ARRAY_FIELDS`."""
        return _tasks_arrays(self.trees, classification=int(self.task == "classification"),
                             catboost=1)

    @classmethod
    def from_arrays(cls, task: str, arrays: dict[str, np.ndarray]) -> BoostedHead:
        """The head :meth:`arrays` described (checked: a ValueError names what is wrong)."""
        if _scalar(arrays, "catboost") != 1:
            raise ValueError("tree head arrays hold no CatBoost trees")
        _check_stored_task(arrays, task)
        return cls(task, _tasks_from(arrays, ObliviousTrees, "classification", "catboost"))


#: each kind of task trees and the array fields it is saved as
_FIELDS = {TaskTrees: task_trees.ARRAY_FIELDS, ObliviousTrees: oblivious_trees.ARRAY_FIELDS}


def _checked_tasks(trees: list[Any], kind: type) -> list[Any]:
    """Each task's trees (:class:`TaskTrees` or :class:`ObliviousTrees`, ``kind``)
    checked; at least one task, one feature count."""
    if not trees:
        raise ValueError("tree head needs at least one task")
    checked = [kind(*t).checked() for t in trees]
    n_features = {t.n_features for t in checked}
    if len(n_features) != 1:
        raise ValueError(f"tree head tasks disagree on the feature count: "
                         f"{sorted(n_features)}")
    return checked


def _check_stored_task(arrays: dict[str, np.ndarray], task: str) -> None:
    """A ValueError unless ``task`` is a task and the arrays' ``classification`` flag's."""
    if task not in TASKS:
        raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
    stored_task = TASKS[0] if _scalar(arrays, "classification") else TASKS[1]
    if stored_task != task:
        raise ValueError(f"tree head arrays hold a {stored_task} head, loaded as {task}")


def _tasks_arrays(trees: list[Any], **kind: int) -> dict[str, np.ndarray]:
    """``n_tasks``, ``n_features``, the ``kind`` flags (int64 scalars) and per task ``t``
    its fields as ``t{t}.<field>``."""
    out = {"n_tasks": np.array(len(trees), np.int64),
           "n_features": np.array(trees[0].n_features, np.int64),
           **{name: np.array(flag, np.int64) for name, flag in kind.items()}}
    for t, task in enumerate(trees):
        for name in _FIELDS[type(task)]:
            out[f"t{t}.{name}"] = np.ascontiguousarray(getattr(task, name))
    return out


def _tasks_from(arrays: dict[str, np.ndarray], kind: type, *flags: str) -> list[Any]:
    """Inverse of :func:`_tasks_arrays` for trees of ``kind`` written with ``flags``
    (unchecked: the heads check them); any key missing or left over is a ValueError."""
    n_tasks = _scalar(arrays, "n_tasks")
    n_features = _scalar(arrays, "n_features")
    expected = {"n_tasks", "n_features", *flags}
    expected |= {f"t{t}.{name}" for t in range(n_tasks) for name in _FIELDS[kind]}
    missing = sorted(expected - set(arrays))
    extra = sorted(set(arrays) - expected)
    if missing or extra:
        raise ValueError(f"tree head arrays: missing {missing}, unexpected {extra}")
    return [kind(n_features=n_features,
                 **{name: arrays[f"t{t}.{name}"] for name in _FIELDS[kind]})
            for t in range(n_tasks)]


def _fit_rows(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training rows ``x`` [N, F] and ``labels`` [N, T] as float64, checked."""
    x = _as_rows(x, None)
    labels = np.asarray(labels, np.float64)
    if labels.ndim != 2:
        raise ValueError(f"tree head labels must be 2-D [rows, tasks], got shape "
                         f"{labels.shape}")
    if labels.shape[0] != x.shape[0]:
        raise ValueError(f"tree head x has {x.shape[0]} rows but labels have "
                         f"{labels.shape[0]}")
    if labels.shape[1] == 0:
        raise ValueError("tree head labels need at least one task column")
    return x, labels


def _check_binary(y: np.ndarray, t: int) -> None:
    """A ValueError unless the known labels ``y`` of task ``t`` are 0 or 1."""
    if np.any((y != 0) & (y != 1)):
        raise ValueError(f"tree head classification labels must be 0 or 1 (or NaN); task "
                         f"{t} has {np.unique(y[(y != 0) & (y != 1)])}")


def _constant_share(y: np.ndarray) -> float:
    """The positive share of 0/1 labels ``y``, clipped so that its log-odds are finite;
    one half when empty."""
    if y.size == 0:
        return 0.5
    return float(np.clip(y.mean(), _CONSTANT_CLIP, 1.0 - _CONSTANT_CLIP))


def _constant_logit(y: np.ndarray) -> float:
    """Log-odds of :func:`_constant_share` (0 when ``y`` is empty)."""
    share = _constant_share(y)
    return float(np.log(share / (1.0 - share)))


def _as_rows(x: np.ndarray, n_features: int | None) -> np.ndarray:
    """``x`` as a float64 [N, F] array; F must be ``n_features`` unless that is None."""
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise ValueError(f"tree head x must be 2-D [rows, features], got shape {x.shape}")
    if n_features is None:
        if x.shape[1] == 0:
            raise ValueError("tree head x needs at least one feature")
    elif x.shape[1] != n_features:
        raise ValueError(f"tree head x has {x.shape[1]} features, the head was fitted on "
                         f"{n_features}")
    return x


def _scalar(arrays: dict[str, np.ndarray], key: str) -> int:
    """The integer stored under ``key`` (one value), checked."""
    if key not in arrays:
        raise ValueError(f"tree head arrays lack {key!r}")
    value = np.asarray(arrays[key])
    if value.size != 1 or not np.issubdtype(value.dtype, np.integer) or value.item() < 0:
        raise ValueError(f"tree head array {key!r} must be one non-negative integer, got "
                         f"{value!r}")
    return int(value.item())
