"""One task's trees as plain node arrays: built from scikit-learn's fitted models, checked,
walked with numpy.

A task's raw score is its baseline plus, over its trees in order, the value of the leaf
each row reaches; that is what scikit-learn's ``decision_function`` (binary classification,
a logit) and ``predict`` (regression with the default squared error, an identity link) give.
The walk follows scikit-learn's rule for numeric features
(``sklearn/ensemble/_hist_gradient_boosting/_predictor.pyx``): at a split, a NaN feature
goes left iff the node's ``missing_go_to_left``, any other value goes left iff it is
``<= threshold``. A "split on NaNs" (the last non-missing bin) has threshold ``+inf``: every
number, ``+inf`` included, goes left and NaNs go right, which the same rule gives unchanged.

A random forest's positive-class probability is the mean over its trees of the positive
share of the leaf each row reaches, so a forest is kept in the same arrays: a leaf's value
is that share divided by the number of trees and the baseline is 0; the same walk sums
them. scikit-learn's own trees (``sklearn/tree/_tree.pyx``) follow the same rule (NaN by
``missing_go_to_left``, else ``<= threshold``) but read the rows as float32, so whoever
walks a forest rounds them so first (:meth:`exlm_chem.model.tree_head.ForestHead.proba`).

Shapes: N rows, F features; M nodes over K trees.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["ARRAY_FIELDS", "TaskTrees"]

# children_left of a leaf in a scikit-learn tree (sklearn.tree._tree.TREE_LEAF)
_SKLEARN_LEAF = -1
# the node arrays in the order ARRAY_FIELDS lists them, with their stored dtypes
_NODE_FIELDS = {
    "feature": np.int64,
    "threshold": np.float64,
    "missing_left": np.uint8,
    "left": np.int64,
    "right": np.int64,
    "value": np.float64,
    "is_leaf": np.uint8,
}
#: the array fields of :class:`TaskTrees`, in the order a head saves them
ARRAY_FIELDS = (*_NODE_FIELDS, "tree_start", "baseline")


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
        dtypes = {**_NODE_FIELDS, "tree_start": np.int64, "baseline": np.float64}
        got = {}
        for name in ARRAY_FIELDS:
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
