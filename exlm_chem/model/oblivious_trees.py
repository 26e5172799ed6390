"""One task's fitted CatBoost model as plain arrays, predicted with numpy alone.

CatBoost's trees are oblivious (symmetric): a tree of depth D applies one split, a float
feature and a border, to every node of a level, so it is D splits and 2**D leaf values.
A row's leaf in the tree is the number whose bit ``l`` is the outcome of the tree's split
``l``; in CatBoost's JSON export (``oblivious_trees[k].splits``) the *first* split listed
is the leaf index's lowest bit. A split's bit is ``value > border``, compared as float32:
CatBoost reads every feature as float32 (a float64 row is rounded to nearest) and its
borders are float32 numbers (the JSON prints them as doubles, exactly), so the walk rounds
the rows to float32 before comparing; comparing in float64 would misplace the values that
lie within a float32 rounding of a border.

NaN follows the feature's ``nan_value_treatment`` in the JSON's
``features_info.float_features``: ``AsFalse`` (CatBoost's default ``nan_mode="Min"``: NaN
sorts below every border, as -inf) and ``AsIs`` (features that held no NaN when fitted,
or ``nan_mode="Forbidden"``: the plain comparison, which is false for NaN) set the bit to
0, ``AsTrue`` (``nan_mode="Max"``: NaN above every border, as +inf) sets it to 1. This is
stored per split (:attr:`ObliviousTrees.nan_bit`).

A split names the feature by its position in ``float_features``; that entry's
``flat_feature_index`` is the column of the rows it reads (the two agree while every
column is a float feature; they are mapped anyway). A constant or ignored column keeps
its entry, with no borders, and no split reads it.

The raw score is ``scale * (sum over trees of the leaf reached) + bias`` (CatBoost's
``scale_and_bias``): a logit for a binary ``Logloss`` classifier (CatBoost's
``RawFormulaVal``), the value for an ``RMSE`` or ``MAE`` regressor.
:mod:`exlm_chem.model.catboost_fit` fits the models these arrays are read from.

The walk is vectorised: for a block of rows it gathers the feature of every split
([n, S]), compares them all against their borders at once, packs each tree's bits into
its leaf index and sums the gathered leaf values; trees are grouped by depth (CatBoost's
trees may stop short of the depth asked for). Blocks of rows keep the temporaries under
about 256 MB.

Shapes: N rows, F features; K trees holding S splits (S = sum of the depths) and
L = sum of 2**depth leaves.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ARRAY_FIELDS", "MAX_DEPTH", "ObliviousTrees"]

#: the array fields of :class:`ObliviousTrees`, in the order they are saved, with their
#: stored dtypes
_FIELD_DTYPES = {
    "split_feature": np.int64,
    "border": np.float32,
    "nan_bit": np.uint8,
    "tree_depth": np.int64,
    "leaf_value": np.float64,
    "scale": np.float64,
    "bias": np.float64,
}
#: the array fields of :class:`ObliviousTrees` in save order (:meth:`ObliviousTrees.arrays`
#: adds the scalar ``n_features`` as an int64 array)
ARRAY_FIELDS = tuple(_FIELD_DTYPES)
#: the deepest tree CatBoost grows (and :meth:`ObliviousTrees.checked` accepts)
MAX_DEPTH = 16
# the bit a NaN sets at a split of a feature with this nan_value_treatment
_NAN_BITS = {"AsFalse": 0, "AsIs": 0, "AsTrue": 1}
# bytes of temporaries the walk allows itself per block of rows
_BLOCK_BYTES = 256 * 2**20


class ObliviousTrees(NamedTuple):
    """One task's CatBoost trees: splits and leaves of all its trees concatenated.

    Tree ``k`` owns the splits ``start[k]:start[k] + tree_depth[k]`` (``start`` the
    cumulative sum of the depths before it), split ``start[k] + l`` deciding bit ``l`` of
    its leaf index, and the leaves ``offset[k]:offset[k] + 2**tree_depth[k]`` (``offset``
    the cumulative sum of ``2**tree_depth`` before it). A model with no trees scores
    ``bias`` everywhere.

    Attributes
    ----------
    n_features : int
        Features F of the rows the model was fitted on.
    split_feature : ndarray [S] int64
        The column (0..F-1) each split reads.
    border : ndarray [S] float32
        A split's bit is 1 where the row's value, rounded to float32, is ``> border``.
    nan_bit : ndarray [S] uint8
        The bit a NaN value sets at each split: 0 (CatBoost's ``AsFalse``, ``nan_mode``
        "Min", and ``AsIs``) or 1 (``AsTrue``, ``nan_mode`` "Max").
    tree_depth : ndarray [K] int64
        Depth of each tree, 0..:data:`MAX_DEPTH`.
    leaf_value : ndarray [L] float64
        The leaf values of each tree in turn, ``2**tree_depth[k]`` of them.
    scale : ndarray [1] float64
        CatBoost's scale: it multiplies the sum of the leaves.
    bias : ndarray [1] float64
        CatBoost's bias (the baseline), added after scaling.
    """

    n_features: int
    split_feature: np.ndarray  # [S] int64
    border: np.ndarray  # [S] float32
    nan_bit: np.ndarray  # [S] uint8
    tree_depth: np.ndarray  # [K] int64
    leaf_value: np.ndarray  # [L] float64
    scale: np.ndarray  # [1] float64
    bias: np.ndarray  # [1] float64

    @classmethod
    def constant(cls, n_features: int, value: float) -> ObliviousTrees:
        """A model with no trees, scoring ``value`` on every row of ``n_features``
        features."""
        empty = {name: np.zeros(0, _FIELD_DTYPES[name])
                 for name in ("split_feature", "border", "nan_bit", "tree_depth",
                              "leaf_value")}
        return cls(n_features=int(n_features), scale=np.ones(1, np.float64),
                   bias=np.array([value], np.float64), **empty).checked()

    @classmethod
    def mean_of(cls, models: Sequence[ObliviousTrees]) -> ObliviousTrees:
        """One model whose raw score is the mean of ``models``' raw scores.

        Their trees stand side by side, each model's leaves multiplied by its scale over
        the number of models; the scale is 1 and the bias the mean of the biases. The
        result is saved and walked as any other model.

        Raises
        ------
        ValueError
            If ``models`` is empty or they read different numbers of features.
        """
        models = [m.checked() for m in models]
        if not models:
            raise ValueError("mean_of needs at least one model")
        n_features = {m.n_features for m in models}
        if len(n_features) != 1:
            raise ValueError(f"mean_of models read different feature counts: "
                             f"{sorted(n_features)}")
        share = 1.0 / len(models)
        joined = {name: np.concatenate([getattr(m, name) for m in models])
                  for name in ("split_feature", "border", "nan_bit", "tree_depth")}
        leaves = np.concatenate([m.leaf_value * (m.scale[0] * share) for m in models])
        bias = np.array([sum(float(m.bias[0]) for m in models) * share], np.float64)
        return cls(n_features=models[0].n_features, leaf_value=leaves,
                   scale=np.ones(1, np.float64), bias=bias, **joined).checked()

    @classmethod
    def from_catboost(cls, model: Any, n_features: int) -> ObliviousTrees:
        """The trees of a fitted CatBoost model with one output (a binary ``Logloss``
        classifier or a single-target regressor) on ``n_features`` float columns.

        The model is exported with ``save_model(..., format="json")`` to a temporary
        directory and read back (no pickle); see :meth:`from_catboost_json`.
        """
        with tempfile.TemporaryDirectory(prefix="exlm_catboost_") as folder:
            path = os.path.join(folder, "model.json")
            model.save_model(path, format="json")
            with open(path, encoding="utf-8") as handle:
                exported = json.load(handle)
        return cls.from_catboost_json(exported, n_features)

    @classmethod
    def from_catboost_json(cls, exported: dict[str, Any], n_features: int) -> ObliviousTrees:
        """The trees of CatBoost's JSON model export (already parsed), read on rows of
        ``n_features`` columns.

        Raises
        ------
        ValueError
            If the model is not one-output oblivious trees of float features only (no
            categorical, text or embedding splits; ``grow_policy="SymmetricTree"``), or a
            split reads a column outside ``0..n_features-1``.
        """
        if "oblivious_trees" not in exported:
            raise ValueError("CatBoost model export has no 'oblivious_trees' (only "
                             "grow_policy='SymmetricTree' models are supported)")
        features = exported.get("features_info", {}).get("float_features", [])
        # a split's float_feature_index names the entry whose feature_index it is
        by_index = {int(f.get("feature_index", position)): f
                    for position, f in enumerate(features)}
        split_feature: list[int] = []
        border: list[float] = []
        nan_bit: list[int] = []
        tree_depth: list[int] = []
        leaf_value: list[float] = []
        for k, tree in enumerate(exported["oblivious_trees"]):
            splits = tree.get("splits") or []  # a tree of depth 0 exports "splits": null
            for split in splits:
                kind = split.get("split_type", "FloatFeature")
                if kind != "FloatFeature":
                    raise ValueError(f"CatBoost tree {k} has a {kind!r} split; only float "
                                     "features are supported")
                feature = by_index.get(int(split["float_feature_index"]))
                if feature is None:
                    raise ValueError(f"CatBoost tree {k} splits on float feature "
                                     f"{split['float_feature_index']}, which features_info "
                                     "does not list")
                treatment = feature.get("nan_value_treatment", "AsIs")
                if treatment not in _NAN_BITS:
                    raise ValueError(f"CatBoost feature {feature['flat_feature_index']} has "
                                     f"an unknown nan_value_treatment {treatment!r}")
                split_feature.append(int(feature["flat_feature_index"]))
                border.append(float(split["border"]))
                nan_bit.append(_NAN_BITS[treatment])
            leaves = tree["leaf_values"]
            if len(leaves) != 2 ** len(splits):
                raise ValueError(f"CatBoost tree {k} has {len(leaves)} leaf values for "
                                 f"depth {len(splits)} (only one-output models are "
                                 "supported)")
            tree_depth.append(len(splits))
            leaf_value.extend(float(v) for v in leaves)
        scale, bias = exported.get("scale_and_bias", [1.0, [0.0]])
        bias = np.atleast_1d(np.asarray(bias, np.float64))
        if bias.size != 1:
            raise ValueError(f"CatBoost model has {bias.size} outputs; only one-output "
                             "models are supported")
        # CatBoost's borders are float32 numbers, printed exactly as doubles
        borders = np.asarray(border, np.float64).astype(np.float32)
        return cls(n_features=int(n_features),
                   split_feature=np.asarray(split_feature, np.int64), border=borders,
                   nan_bit=np.asarray(nan_bit, np.uint8),
                   tree_depth=np.asarray(tree_depth, np.int64),
                   leaf_value=np.asarray(leaf_value, np.float64),
                   scale=np.array([scale], np.float64), bias=bias).checked()

    def checked(self) -> ObliviousTrees:
        """These trees with contiguous 1-D arrays of the stored dtypes.

        Saved arrays are read back from a file, so what the walk relies on is checked
        here once.

        Raises
        ------
        ValueError
            Naming the field: an array that is not 1-D, of the wrong kind (integer fields
            must hold integers) or of the wrong length (S splits in ``split_feature``,
            ``border`` and ``nan_bit``; S = ``tree_depth.sum()``; ``2**tree_depth``
            leaves per tree; one ``scale`` and one ``bias``), a split reading a column
            outside ``0..n_features-1``, a depth outside ``0..MAX_DEPTH``, a NaN border,
            a ``nan_bit`` other than 0 or 1, or a leaf, scale or bias that is not finite.
        """
        try:
            n_features = int(self.n_features)
        except (TypeError, ValueError):
            raise ValueError(f"oblivious trees 'n_features' must be an integer, got "
                             f"{self.n_features!r}") from None
        if n_features != self.n_features or n_features < 1:
            raise ValueError(f"oblivious trees 'n_features' must be a positive integer, "
                             f"got {self.n_features!r}")
        got: dict[str, np.ndarray] = {}
        for name, dtype in _FIELD_DTYPES.items():
            array = np.asarray(getattr(self, name))
            if array.ndim != 1:
                raise ValueError(f"oblivious trees array {name!r} must be 1-D, got shape "
                                 f"{array.shape}")
            integral = np.issubdtype(dtype, np.integer)
            kinds = "biu" if integral else "biuf"
            if array.size and array.dtype.kind not in kinds:
                raise ValueError(f"oblivious trees array {name!r} must hold "
                                 f"{'integers' if integral else 'real numbers'}, got "
                                 f"{array.dtype}")
            if integral and array.size and (array.min() < np.iinfo(dtype).min
                                            or array.max() > np.iinfo(dtype).max):
                raise ValueError(f"oblivious trees array {name!r} is out of range for "
                                 f"{np.dtype(dtype)}")
            got[name] = np.ascontiguousarray(array, dtype=dtype)
        depth = got["tree_depth"]
        if np.any((depth < 0) | (depth > MAX_DEPTH)):
            raise ValueError(f"oblivious trees 'tree_depth' must lie in 0..{MAX_DEPTH}")
        n_splits = int(depth.sum())
        for name in ("split_feature", "border", "nan_bit"):
            if got[name].size != n_splits:
                raise ValueError(f"oblivious trees array {name!r} has {got[name].size} "
                                 f"values, 'tree_depth' sums to {n_splits} splits")
        n_leaves = int((np.int64(1) << depth).sum())
        if got["leaf_value"].size != n_leaves:
            raise ValueError(f"oblivious trees array 'leaf_value' has "
                             f"{got['leaf_value'].size} values, 'tree_depth' needs "
                             f"{n_leaves}")
        for name in ("scale", "bias"):
            if got[name].size != 1:
                raise ValueError(f"oblivious trees array {name!r} must hold one value, "
                                 f"got {got[name].size}")
        feature = got["split_feature"]
        if np.any((feature < 0) | (feature >= n_features)):
            raise ValueError(f"oblivious trees 'split_feature' must lie in "
                             f"0..{n_features - 1}")
        if np.any(np.isnan(got["border"])):
            raise ValueError("oblivious trees 'border' must not be NaN")
        if np.any(got["nan_bit"] > 1):
            raise ValueError("oblivious trees 'nan_bit' must be 0 or 1")
        for name in ("leaf_value", "scale", "bias"):
            if not np.all(np.isfinite(got[name])):
                raise ValueError(f"oblivious trees array {name!r} must be finite")
        return ObliviousTrees(n_features=n_features, **got)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything :meth:`from_arrays` needs, for ``safetensors.numpy.save``:
        ``n_features`` as an int64 0-d array, then the :data:`ARRAY_FIELDS` (contiguous,
        of their stored dtypes)."""
        checked = self.checked()
        return {"n_features": np.array(checked.n_features, np.int64),
                **{name: getattr(checked, name) for name in ARRAY_FIELDS}}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ObliviousTrees:
        """The trees :meth:`arrays` described, :meth:`checked`.

        Raises
        ------
        ValueError
            If a key is missing or unexpected, ``n_features`` is not one integer, or the
            arrays fail :meth:`checked`.
        """
        expected = {"n_features", *ARRAY_FIELDS}
        missing = sorted(expected - set(arrays))
        extra = sorted(set(arrays) - expected)
        if missing or extra:
            raise ValueError(f"oblivious trees arrays: missing {missing}, unexpected {extra}")
        n_features = np.asarray(arrays["n_features"])
        if n_features.size != 1 or n_features.dtype.kind not in "iu":
            raise ValueError(f"oblivious trees 'n_features' must be one integer, got "
                             f"{n_features.dtype} of shape {n_features.shape}")
        return cls(n_features=int(n_features.reshape(())),
                   **{name: arrays[name] for name in ARRAY_FIELDS}).checked()

    def decision(self, x: np.ndarray) -> np.ndarray:
        """Raw scores of rows ``x``: CatBoost's ``RawFormulaVal`` (logits of a classifier,
        values of a regressor).

        Parameters
        ----------
        x : ndarray [N, F]
            Rows of the ``n_features`` columns the model was fitted on, any real dtype;
            NaN allowed. They are rounded to float32 before the comparisons, as CatBoost
            reads them.

        Returns
        -------
        ndarray [N] float64

        Raises
        ------
        ValueError
            If ``x`` is not 2-D with ``n_features`` columns.
        """
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"oblivious trees read rows of {self.n_features} features, got "
                             f"shape {x.shape}")
        n_rows = x.shape[0]
        depth = np.asarray(self.tree_depth, np.int64)  # [K]
        split_start = np.concatenate([[0], np.cumsum(depth)])[:-1]  # [K]
        leaf_start = np.concatenate([[0], np.cumsum(np.int64(1) << depth)])[:-1]  # [K]
        leaf_value = np.asarray(self.leaf_value, np.float64)  # [L]
        border = np.asarray(self.border, np.float32)  # [S]
        feature = np.asarray(self.split_feature, np.intp)  # [S]
        nan_bit = np.asarray(self.nan_bit).astype(bool)  # [S]
        # a tree of depth 0 has one leaf, reached by every row
        total = np.full(n_rows, leaf_value[leaf_start[depth == 0]].sum(), np.float64)
        # trees grouped by depth: each group's splits as [K_d, d] (level l: bit l)
        groups = []
        for d in np.unique(depth[depth > 0]):
            trees = np.flatnonzero(depth == d)  # [K_d]
            splits = (split_start[trees, None] + np.arange(d)).ravel()  # [K_d * d]
            nan_at = np.flatnonzero(nan_bit[splits])
            groups.append((int(d), feature[splits], border[splits], nan_at,
                           leaf_start[trees]))
        n_splits, n_trees = int(depth.sum()), int(depth.size)
        row_bytes = 4 * self.n_features + 5 * n_splits + 24 * n_trees + 8
        block = max(1, _BLOCK_BYTES // row_bytes)
        for lo in range(0, n_rows, block):
            with np.errstate(over="ignore"):  # beyond float32's range: +-inf, as CatBoost
                rows = x[lo:lo + block].astype(np.float32)  # [n, F]
            n = rows.shape[0]
            for d, columns, borders, nan_at, leaf_offset in groups:
                values = np.take(rows, columns, axis=1)  # [n, K_d * d]
                bits = values > borders  # [n, K_d * d]; NaN: False
                if nan_at.size:
                    bits[:, nan_at] |= np.isnan(values[:, nan_at])
                bits = bits.reshape(n, -1, d)  # [n, K_d, d]
                leaf = bits[..., 0].astype(np.intp)  # [n, K_d]
                for level in range(1, d):
                    leaf |= bits[..., level].astype(np.intp) << level
                leaf += leaf_offset
                total[lo:lo + n] += leaf_value[leaf].sum(axis=1)
        return float(self.scale[0]) * total + float(self.bias[0])
