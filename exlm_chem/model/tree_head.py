"""A gradient-boosted tree head on per-molecule feature vectors, stored as plain arrays.

:meth:`TreeHead.fit` fits one scikit-learn histogram gradient-boosting model per task
(:class:`~sklearn.ensemble.HistGradientBoostingClassifier` for 0/1 labels,
:class:`~sklearn.ensemble.HistGradientBoostingRegressor` for values) and keeps only what
prediction needs: each tree's nodes as numeric arrays and the model's baseline. Those arrays
(:meth:`TreeHead.arrays`) are what gets saved, in a safetensors file beside the weights, and
:meth:`TreeHead.decision` walks them with numpy. Loading a head therefore never unpickles
(a pickled estimator can run any code when it is loaded) and never needs the scikit-learn
version that fitted it.

The raw score of a task is its baseline plus, over its trees in order, the value of the leaf
each row reaches; that is what scikit-learn's ``decision_function`` (binary classification,
a logit) and ``predict`` (regression with the default squared error, an identity link) give.
The walk follows scikit-learn's rule for numeric features
(``sklearn/ensemble/_hist_gradient_boosting/_predictor.pyx``): at a split, a NaN feature
goes left iff the node's ``missing_go_to_left``, any other value goes left iff it is
``<= threshold``. A "split on NaNs" (the last non-missing bin) has threshold ``+inf``: every
number, ``+inf`` included, goes left and NaNs go right, which the same rule gives unchanged.

:class:`ForestHead` keeps a scikit-learn :class:`~sklearn.ensemble.RandomForestClassifier`
per task in the same arrays: a forest's positive-class probability is the mean over its
trees of the positive share of the leaf each row reaches, so a leaf's value is that share
divided by the number of trees and the baseline is 0; the same walk sums them. scikit-learn's
own trees (``sklearn/tree/_tree.pyx``) follow the same rule (NaN by ``missing_go_to_left``,
else ``<= threshold``) but read the rows as float32, so the forest rounds them so first.

Shapes: N rows, F features, T tasks; per task, M nodes over K trees.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["FOREST_SETTINGS", "TASKS", "ForestHead", "TaskTrees", "TreeHead"]

TASKS = ("classification", "regression")
# the positive share of a one-class classification task is clipped to this before its
# log-odds are taken, so that a task never seen negative still scores a finite logit
_CONSTANT_CLIP = 1e-3
#: each task's random forest: the benchmark runner's ``rf_rdkit2d``
#: (:class:`exlm_chem.benchmark.rf.RandomForestSettings`, a layer this one may not import)
FOREST_SETTINGS = {"n_estimators": 100, "class_weight": "balanced", "min_samples_leaf": 1}
# children_left of a leaf in a scikit-learn tree (sklearn.tree._tree.TREE_LEAF)
_SKLEARN_LEAF = -1
# per task, the node arrays in the order arrays() writes them, with their stored dtypes
_NODE_FIELDS = {
    "feature": np.int64,
    "threshold": np.float64,
    "missing_left": np.uint8,
    "left": np.int64,
    "right": np.int64,
    "value": np.float64,
    "is_leaf": np.uint8,
}


class TaskTrees(NamedTuple):
    """The trees of one task: node arrays of all its trees concatenated.

    Node ``i`` of tree ``k`` is row ``tree_start[k] + i``; ``left``/``right`` hold indices
    into the concatenated arrays (not within the tree), so the walk needs no offsets. The
    root of tree ``k`` is ``tree_start[k]``; ``tree_start[-1]`` is the node count M. A task
    with no trees (``tree_start == [0]``) scores its baseline everywhere.

    Attributes
    ----------
    n_features : int
        Features F of the rows the trees were fitted on.
    feature : ndarray [M] int64
        Feature a split node reads (ignored at leaves).
    threshold : ndarray [M] float64
        A split sends a number left iff it is ``<= threshold`` (``+inf``: all of them).
    missing_left : ndarray [M] uint8
        1 where a split sends NaN left.
    left, right : ndarray [M] int64
        Children of a split node, as indices into these arrays (ignored at leaves).
    value : ndarray [M] float64
        A leaf's contribution to the raw score (ignored at split nodes).
    is_leaf : ndarray [M] uint8
        1 at leaves.
    tree_start : ndarray [K + 1] int64
        Offsets of each tree's nodes, then M.
    baseline : ndarray [1] float64
        Raw score before any tree (scikit-learn's baseline prediction, or a constant task's
        score).
    """

    n_features: int
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    is_leaf: np.ndarray
    tree_start: np.ndarray
    baseline: np.ndarray

    @classmethod
    def constant(cls, n_features: int, score: float) -> TaskTrees:
        """A task with no trees, scoring ``score`` on every row."""
        empty = {name: np.zeros(0, dtype) for name, dtype in _NODE_FIELDS.items()}
        return cls(n_features=n_features, tree_start=np.zeros(1, np.int64),
                   baseline=np.array([score], np.float64), **empty)

    @classmethod
    def from_estimator(cls, estimator: Any, n_features: int) -> TaskTrees:
        """The trees of a fitted binary ``HistGradientBoostingClassifier`` or a
        ``HistGradientBoostingRegressor`` (one tree per iteration)."""
        if estimator.n_trees_per_iteration_ != 1:
            raise ValueError("tree head exports one tree per iteration (binary classification "
                             f"or regression), got {estimator.n_trees_per_iteration_}")
        baseline = np.asarray(estimator._baseline_prediction, np.float64).ravel()
        if baseline.size != 1:
            raise ValueError(f"tree head expects one baseline value, got {baseline.size}")
        trees = []
        for iteration in estimator._predictors:
            (predictor,) = iteration
            nodes = predictor.nodes
            if nodes["is_categorical"].any():
                raise ValueError("tree head supports numeric splits only, got a categorical "
                                 "split (categorical features are not supported)")
            trees.append({"feature": nodes["feature_idx"], "threshold": nodes["num_threshold"],
                          "missing_left": nodes["missing_go_to_left"], "left": nodes["left"],
                          "right": nodes["right"], "value": nodes["value"],
                          "is_leaf": nodes["is_leaf"]})
        return cls(n_features=n_features, baseline=baseline, **_joined(trees))

    @classmethod
    def from_forest(cls, forest: Any, n_features: int) -> TaskTrees:
        """The trees of a fitted ``RandomForestClassifier`` of classes 0 and 1, whose raw
        score is the forest's ``predict_proba[:, 1]`` of rows rounded to float32.

        A leaf's value is its positive share over the number of trees. scikit-learn
        stores a classifier leaf's class shares in ``tree_.value`` (weighted by the class
        and bootstrap weights; since 1.4 as fractions, before as weighted counts that
        ``predict_proba`` divided by their sum), so the share is taken as the positive
        entry over the leaf's sum, which reads either.
        """
        if forest.n_outputs_ != 1 or not np.array_equal(forest.classes_, [0, 1]):
            raise ValueError(f"a forest head exports one output of classes [0, 1], got "
                             f"{forest.n_outputs_} output(s) of classes {forest.classes_}")
        n_trees = len(forest.estimators_)
        trees = []
        for estimator in forest.estimators_:
            tree = estimator.tree_
            split = tree.children_left != _SKLEARN_LEAF
            weights = tree.value[:, 0, :]  # [M, 2]: per node, negative and positive class
            share = weights[:, 1] / weights.sum(axis=1)
            trees.append({"feature": tree.feature, "threshold": tree.threshold,
                          "missing_left": tree.missing_go_to_left,
                          "left": tree.children_left, "right": tree.children_right,
                          "value": np.where(split, 0.0, share / n_trees),
                          "is_leaf": (~split).astype(np.uint8)})
        return cls(n_features=n_features, baseline=np.zeros(1), **_joined(trees))

    def checked(self) -> TaskTrees:
        """These trees with contiguous arrays of the stored dtypes; a ValueError if they
        could not have come from :meth:`from_estimator`.

        Saved arrays are read back from a file, so the walk's guarantees are checked here
        once: every child index lies after its parent and inside its tree (the walk ends
        and never leaves the tree), and every split reads a feature that exists.
        """
        names = (*_NODE_FIELDS, "tree_start", "baseline")
        dtypes = {**_NODE_FIELDS, "tree_start": np.int64, "baseline": np.float64}
        got = {}
        for name in names:
            array = np.asarray(getattr(self, name))
            if array.ndim != 1:
                raise ValueError(f"tree head array {name!r} must be 1-D, got shape {array.shape}")
            got[name] = np.ascontiguousarray(array, dtype=dtypes[name])
        n_nodes = got["feature"].size
        for name in _NODE_FIELDS:
            if got[name].size != n_nodes:
                raise ValueError(f"tree head array {name!r} has {got[name].size} nodes, "
                                 f"'feature' has {n_nodes}")
        if got["baseline"].size != 1:
            raise ValueError(f"tree head baseline must hold one value, got {got['baseline'].size}")
        starts = got["tree_start"]
        if (starts.size == 0 or starts[0] != 0 or starts[-1] != n_nodes
                or np.any(np.diff(starts) <= 0)):
            raise ValueError(f"tree head tree_start must rise from 0 to the node count "
                             f"{n_nodes}, got {starts.tolist()}")
        n_features = int(self.n_features)
        if n_features < 1:
            raise ValueError(f"tree head needs at least one feature, got {n_features}")
        split = got["is_leaf"] == 0
        if np.any(~split & (got["is_leaf"] != 1)) or np.any(got["missing_left"] > 1):
            raise ValueError("tree head flags 'is_leaf' and 'missing_left' must be 0 or 1")
        if n_nodes:
            # the end of the tree each node belongs to
            end = np.repeat(starts[1:], np.diff(starts))
            index = np.arange(n_nodes)
            for name in ("left", "right"):
                child = got[name][split]
                if np.any((child <= index[split]) | (child >= end[split])):
                    raise ValueError(f"tree head {name!r} children must lie after their node "
                                     "and inside its tree")
            feature = got["feature"][split]
            if np.any((feature < 0) | (feature >= n_features)):
                raise ValueError(f"tree head splits must read features 0..{n_features - 1}")
            if np.any(np.isnan(got["threshold"][split])):
                raise ValueError("tree head split thresholds must not be NaN")
        return TaskTrees(n_features=n_features, **got)

    def decision(self, x: np.ndarray) -> np.ndarray:
        """Raw scores [N] of rows ``x`` [N, F] (float64, already checked)."""
        out = np.full(x.shape[0], self.baseline[0], np.float64)
        rows = np.arange(x.shape[0])
        for k in range(self.tree_start.size - 1):
            node = np.full(x.shape[0], self.tree_start[k], np.int64)
            leaf = self.is_leaf[node].astype(bool)
            # children lie after their parent, so each step moves every unfinished row
            # deeper and the loop ends within the tree's node count
            while not leaf.all():
                # a leaf's feature is unused and, read from a file, need not be valid
                value = x[rows, np.where(leaf, 0, self.feature[node])]
                go_left = np.where(np.isnan(value), self.missing_left[node].astype(bool),
                                   value <= self.threshold[node])
                child = np.where(go_left, self.left[node], self.right[node])
                node = np.where(leaf, node, child)
                leaf = self.is_leaf[node].astype(bool)
            # added tree by tree, in order, as scikit-learn sums them: same rounding
            out += self.value[node]
        return out


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

    def __init__(self, task: str, trees: list[TaskTrees]) -> None:
        if task not in TASKS:
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        self.task = task
        self.trees = _checked_tasks(trees)

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
        if task not in TASKS:
            raise ValueError(f"tree head task must be one of {TASKS}, got {task!r}")
        stored_task = TASKS[0] if _scalar(arrays, "classification") else TASKS[1]
        if stored_task != task:
            raise ValueError(f"tree head arrays hold a {stored_task} head, loaded as {task}")
        return cls(task, _tasks_from(arrays, "classification"))


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
        self.trees = _checked_tasks(trees)

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
        return cls(_tasks_from(arrays, "forest"))


def _joined(trees: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The node arrays of ``trees`` (each tree's children indexed within it) concatenated
    as :class:`TaskTrees` holds them, and their ``tree_start``."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in _NODE_FIELDS}
    starts = [0]
    for nodes in trees:
        offset = starts[-1]
        split = np.asarray(nodes["is_leaf"]) == 0
        for name in _NODE_FIELDS:
            parts[name].append(np.asarray(nodes[name]))
        # children become indices into the concatenated arrays; a leaf's stay 0, unused
        for name in ("left", "right"):
            parts[name][-1] = np.where(split, parts[name][-1].astype(np.int64) + offset, 0)
        starts.append(offset + split.size)
    joined = {name: np.ascontiguousarray(np.concatenate(chunks) if chunks else np.zeros(0),
                                         dtype=_NODE_FIELDS[name])
              for name, chunks in parts.items()}
    return {**joined, "tree_start": np.asarray(starts, np.int64)}


def _checked_tasks(trees: list[TaskTrees]) -> list[TaskTrees]:
    """Each task's trees :meth:`~TaskTrees.checked`; at least one task, one feature count."""
    if not trees:
        raise ValueError("tree head needs at least one task")
    checked = [TaskTrees(*t).checked() for t in trees]
    n_features = {t.n_features for t in checked}
    if len(n_features) != 1:
        raise ValueError(f"tree head tasks disagree on the feature count: "
                         f"{sorted(n_features)}")
    return checked


def _tasks_arrays(trees: list[TaskTrees], **kind: int) -> dict[str, np.ndarray]:
    """``n_tasks``, ``n_features``, the ``kind`` flags (int64 scalars) and per task ``t``
    its fields as ``t{t}.<field>``."""
    out = {"n_tasks": np.array(len(trees), np.int64),
           "n_features": np.array(trees[0].n_features, np.int64),
           **{name: np.array(flag, np.int64) for name, flag in kind.items()}}
    for t, task in enumerate(trees):
        for name in (*_NODE_FIELDS, "tree_start", "baseline"):
            out[f"t{t}.{name}"] = np.ascontiguousarray(getattr(task, name))
    return out


def _tasks_from(arrays: dict[str, np.ndarray], kind: str) -> list[TaskTrees]:
    """Inverse of :func:`_tasks_arrays` written with the flag ``kind`` (unchecked: the
    heads check them); any key missing or left over is a ValueError."""
    n_tasks = _scalar(arrays, "n_tasks")
    n_features = _scalar(arrays, "n_features")
    names = (*_NODE_FIELDS, "tree_start", "baseline")
    expected = {"n_tasks", "n_features", kind}
    expected |= {f"t{t}.{name}" for t in range(n_tasks) for name in names}
    missing = sorted(expected - set(arrays))
    extra = sorted(set(arrays) - expected)
    if missing or extra:
        raise ValueError(f"tree head arrays: missing {missing}, unexpected {extra}")
    return [TaskTrees(n_features=n_features, **{name: arrays[f"t{t}.{name}"] for name in names})
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
