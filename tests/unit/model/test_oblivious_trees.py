"""exlm_chem.model.oblivious_trees and catboost_fit: CatBoost's trees as arrays, walked by numpy.

The walk is pinned to CatBoost's own predictions (``RawFormulaVal``) on rows with NaN, a
constant column, values on and a float64 hair above the borders, and values beyond
float32's range; hand-built trees pin the bit order, the NaN bit and the float32
comparison, and a plain per-row walk pins trees of mixed depths.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from exlm_chem.model import catboost_fit, oblivious_trees
from exlm_chem.model.catboost_fit import CATBOOST_SETTINGS, fit_catboost
from exlm_chem.model.oblivious_trees import ARRAY_FIELDS, ObliviousTrees

N_ROWS, N_FEATURES, ITERATIONS, SEED = 300, 20, 50, 7
CONSTANT_COLUMN, NO_NAN_COLUMN = 5, 7
ATOL = 1e-9


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N_ROWS, N_FEATURES)) * rng.uniform(0.1, 100, N_FEATURES)
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, CONSTANT_COLUMN] = 3.0
    x[:, NO_NAN_COLUMN] = rng.normal(size=N_ROWS)
    signal = np.nan_to_num(x[:, 0]) / 50 + np.nan_to_num(x[:, 3]) / 50 + x[:, NO_NAN_COLUMN]
    signal += np.isnan(x[:, 1])  # NaN itself carries signal
    labels = (signal + rng.normal(size=N_ROWS) * 0.5 > 0).astype(np.float64)
    values = signal + rng.normal(size=N_ROWS) * 0.3
    return {"x": x, "labels": labels, "values": (values - values.mean()) / values.std()}


def _test_rows(x: np.ndarray, trees: ObliviousTrees, seed: int = 1) -> np.ndarray:
    """New rows [400, F]: NaN in every column (the NaN-free one included), values exactly
    on the model's borders and a float64 hair above them (equal to them in float32), and
    values beyond float32's range."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(400, x.shape[1])) * np.nanstd(x, axis=0)
    rows[rng.random(rows.shape) < 0.15] = np.nan
    for column in np.unique(trees.split_feature):
        borders = trees.border[trees.split_feature == column].astype(np.float64)
        rows[:60, column] = rng.choice(borders, 60)
        above = rng.choice(borders, 60)
        rows[60:120, column] = above + np.abs(above) * 1e-12 + 1e-300
    rows[120:125] = 1e300
    rows[125:130] = -1e300
    rows[130:135] = np.inf
    return rows


def _catboost_model(task: str, depth: int, **params):
    catboost = pytest.importorskip("catboost")
    kind = catboost.CatBoostClassifier if task == "classification" else catboost.CatBoostRegressor
    loss = "Logloss" if task == "classification" else "MAE"
    settings = {**CATBOOST_SETTINGS, "loss_function": loss, "random_seed": SEED,
                "thread_count": 1, "iterations": ITERATIONS, "depth": depth, **params}
    return kind(**settings)


CASES = [
    ("classification", 4, {}),
    ("classification", 6, {}),
    ("classification", 6, {"nan_mode": "Max"}),
    ("regression", 4, {}),
    ("regression", 6, {}),
    ("regression", 6, {"loss_function": "RMSE"}),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-d{c[1]}-{c[2]}")
def fitted(request, data):
    task, depth, params = request.param
    model = _catboost_model(task, depth, **params)
    y = data["labels"].astype(np.int64) if task == "classification" else data["values"]
    model.fit(data["x"], y)
    return task, model, ObliviousTrees.from_catboost(model, N_FEATURES)


def test_decision_reproduces_catboost(fitted, data):
    task, model, trees = fitted
    rows = _test_rows(data["x"], trees)
    expected = model.predict(rows, prediction_type="RawFormulaVal")
    got = trees.decision(rows)
    assert got.dtype == np.float64 and got.shape == (rows.shape[0],)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(trees.decision(data["x"]),
                               model.predict(data["x"], prediction_type="RawFormulaVal"),
                               rtol=0, atol=ATOL)
    if task == "classification":
        positive = model.predict_proba(rows)[:, 1]
        np.testing.assert_allclose(1 / (1 + np.exp(-got)), positive, rtol=0, atol=1e-12)
    else:
        np.testing.assert_allclose(got, model.predict(rows), rtol=0, atol=ATOL)


def test_export_reads_the_model(fitted):
    _, model, trees = fitted
    assert trees.tree_depth.size == model.tree_count_
    assert CONSTANT_COLUMN not in trees.split_feature
    assert trees.border.dtype == np.float32 and trees.nan_bit.dtype == np.uint8
    nan_mode = model.get_params().get("nan_mode", "Min")
    # NaN-free when fitted: AsIs, NaN compares false whatever nan_mode says
    on_nan_free = trees.split_feature == NO_NAN_COLUMN
    assert not trees.nan_bit[on_nan_free].any()
    assert on_nan_free.any() and not on_nan_free.all()
    assert np.all(trees.nan_bit[~on_nan_free] == (nan_mode == "Max"))


def test_small_blocks_give_the_same_scores(fitted, data, monkeypatch):
    _, _, trees = fitted
    rows = _test_rows(data["x"], trees)
    whole = trees.decision(rows)
    monkeypatch.setattr(oblivious_trees, "_BLOCK_BYTES", 1)  # one row per block
    np.testing.assert_allclose(trees.decision(rows), whole, rtol=0, atol=1e-12)


def _exported(model) -> dict:
    import json
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


def test_split_features_map_through_flat_feature_index(fitted, data):
    """A split names its float feature by the entry's ``feature_index`` (renumbering the
    entries and the splits alike changes nothing), and the entry's ``flat_feature_index``
    is the column it reads (shifting every column by one, as a leading non-float column
    would, reads the shifted rows)."""
    _, model, trees = fitted
    exported = _exported(model)
    rows = _test_rows(data["x"], trees)
    expected = trees.decision(rows)

    features = exported["features_info"]["float_features"]
    renumbered = copy.deepcopy(exported)
    last = len(features) - 1
    for feature in renumbered["features_info"]["float_features"]:
        feature["feature_index"] = last - feature["feature_index"]
    for tree in renumbered["oblivious_trees"]:
        for split in tree["splits"]:
            split["float_feature_index"] = last - split["float_feature_index"]
    again = ObliviousTrees.from_catboost_json(renumbered, N_FEATURES)
    np.testing.assert_array_equal(again.split_feature, trees.split_feature)
    np.testing.assert_array_equal(again.decision(rows), expected)

    shifted = copy.deepcopy(exported)
    for feature in shifted["features_info"]["float_features"]:
        feature["flat_feature_index"] += 1
    moved = ObliviousTrees.from_catboost_json(shifted, N_FEATURES + 1)
    np.testing.assert_array_equal(moved.split_feature, trees.split_feature + 1)
    wider = np.concatenate([np.full((rows.shape[0], 1), np.nan), rows], axis=1)
    np.testing.assert_array_equal(moved.decision(wider), expected)
    with pytest.raises(ValueError, match="split_feature"):
        ObliviousTrees.from_catboost_json(shifted, N_FEATURES)


def test_arrays_round_trip_through_safetensors(fitted, data):
    from safetensors.numpy import load, save

    _, _, trees = fitted
    arrays = trees.arrays()
    assert list(arrays) == ["n_features", *ARRAY_FIELDS]
    assert arrays["n_features"].dtype == np.int64 and arrays["n_features"].shape == ()
    loaded = ObliviousTrees.from_arrays(load(save(arrays)))
    assert loaded.n_features == N_FEATURES
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(loaded, name), getattr(trees, name))
        assert getattr(loaded, name).dtype == getattr(trees, name).dtype
    rows = _test_rows(data["x"], trees)
    np.testing.assert_array_equal(loaded.decision(rows), trees.decision(rows))


def test_fit_catboost_fits_at_the_settings(data):
    trees = fit_catboost(data["x"], data["labels"], "classification", SEED,
                         iterations=ITERATIONS, depth=4)
    model = _catboost_model("classification", 4)
    model.fit(data["x"], data["labels"].astype(np.int64))
    params = model.get_params()
    assert params["random_strength"] == 2 and params["loss_function"] == "Logloss"
    direct = ObliviousTrees.from_catboost(model, N_FEATURES)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(trees, name), getattr(direct, name))
    regression = fit_catboost(data["x"], data["values"], "regression", SEED,
                              iterations=ITERATIONS, depth=4, loss_function="MAE")
    model = _catboost_model("regression", 4)
    model.fit(data["x"], data["values"])
    np.testing.assert_allclose(regression.decision(data["x"]), model.predict(data["x"]),
                               rtol=0, atol=ATOL)


def test_regression_default_is_the_mean_of_mae_and_rmse(data):
    averaged = fit_catboost(data["x"], data["values"], "regression", SEED,
                            iterations=ITERATIONS, depth=4)
    predictions = []
    for loss in ("MAE", "RMSE"):
        model = _catboost_model("regression", 4, loss_function=loss)
        model.fit(data["x"], data["values"])
        predictions.append(model.predict(data["x"]))
    assert averaged.tree_depth.size == 2 * ITERATIONS
    rows = _test_rows(data["x"], averaged)
    expected = np.mean([_catboost_model("regression", 4, loss_function=loss)
                        .fit(data["x"], data["values"]).predict(rows)
                        for loss in ("MAE", "RMSE")], axis=0)
    np.testing.assert_allclose(averaged.decision(rows), expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(averaged.decision(data["x"]), np.mean(predictions, axis=0),
                               rtol=0, atol=ATOL)
    assert not np.allclose(predictions[0], predictions[1])  # two models, not one twice


def test_mean_of_averages_scales_and_biases():
    first = _two_levels(border=1.0)
    second = first._replace(leaf_value=first.leaf_value[::-1] * 3, scale=np.array([0.5]),
                            bias=np.array([2.0]))
    rows = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0], [np.nan, 2.0]])
    both = ObliviousTrees.mean_of([first, second])
    np.testing.assert_allclose(both.decision(rows),
                               (first.decision(rows) + second.decision(rows)) / 2,
                               rtol=0, atol=1e-12)
    assert both.scale[0] == 1.0 and both.tree_depth.size == 2
    with pytest.raises(ValueError, match="at least one"):
        ObliviousTrees.mean_of([])
    with pytest.raises(ValueError, match="feature counts"):
        ObliviousTrees.mean_of([first, ObliviousTrees.constant(5, 1.0)])


def test_catboost_settings_are_maplights():
    assert CATBOOST_SETTINGS == {"iterations": 1000, "depth": 6, "random_strength": 2,
                                 "verbose": 0, "allow_writing_files": False}


@pytest.mark.parametrize(("y", "task", "problem"), [
    (np.ones(N_ROWS), "classification", "single class"),
    (np.full(N_ROWS, 2.0), "classification", "0/1"),
    (np.full(N_ROWS, 0.5), "regression", "all equal"),
    (np.r_[np.nan, np.zeros(N_ROWS - 1)], "regression", "finite"),
    (np.zeros(N_ROWS), "ranking", "task"),
])
def test_fit_catboost_rejects_labels_it_cannot_fit(data, y, task, problem):
    with pytest.raises(ValueError, match=problem):
        fit_catboost(data["x"], y, task, SEED, iterations=2)


@pytest.mark.parametrize(("loss", "task"), [
    ("RMSE", "classification"), ((), "regression"), (("MAE", "MAE"), "regression"),
    (("MAE", "Logloss"), "regression"), (3, "regression")])
def test_fit_catboost_rejects_a_loss_it_cannot_fit(data, loss, task):
    with pytest.raises(ValueError, match="loss_function"):
        fit_catboost(data["x"], data["labels"], task, SEED, loss_function=loss)


def test_checked_losses_defaults():
    assert catboost_fit.checked_losses(None, "regression") == ("MAE", "RMSE")
    assert catboost_fit.checked_losses(None, "classification") == ("Logloss",)
    assert catboost_fit.checked_losses("RMSE", "regression") == ("RMSE",)
    assert catboost_fit.checked_losses(["RMSE", "MAE"], "regression") == ("RMSE", "MAE")


# ---- hand-built trees -------------------------------------------------------------------


def _two_levels(border: float = 1.0, nan_bit: tuple[int, int] = (0, 0)) -> ObliviousTrees:
    """One tree of depth 2: split 0 reads column 0, split 1 column 1; leaf i scores i."""
    return ObliviousTrees(
        n_features=2, split_feature=np.array([0, 1]),
        border=np.array([border, 0.0], np.float32), nan_bit=np.array(nan_bit, np.uint8),
        tree_depth=np.array([2]), leaf_value=np.array([0.0, 1.0, 2.0, 3.0]),
        scale=np.array([1.0]), bias=np.array([0.0])).checked()


def test_first_split_is_the_lowest_bit():
    trees = _two_levels()
    rows = np.array([[0.0, -1.0], [2.0, -1.0], [0.0, 1.0], [2.0, 1.0]])
    np.testing.assert_array_equal(trees.decision(rows), [0.0, 1.0, 2.0, 3.0])


def test_values_compare_as_float32():
    trees = _two_levels(border=1.0)
    # above the border in float64, on it in float32: not above, as CatBoost reads it
    rows = np.array([[1.0 + 1e-12, -1.0], [np.nextafter(np.float32(1), np.float32(2)), -1.0]])
    np.testing.assert_array_equal(trees.decision(rows), [0.0, 1.0])


def test_nan_sets_the_stored_bit():
    rows = np.array([[np.nan, np.nan], [np.inf, -np.inf]])
    np.testing.assert_array_equal(_two_levels(nan_bit=(0, 0)).decision(rows), [0.0, 1.0])
    np.testing.assert_array_equal(_two_levels(nan_bit=(1, 0)).decision(rows), [1.0, 1.0])
    np.testing.assert_array_equal(_two_levels(nan_bit=(1, 1)).decision(rows), [3.0, 1.0])


def _plain_walk(trees: ObliviousTrees, x: np.ndarray) -> np.ndarray:
    """Row by row, tree by tree, level by level."""
    out = []
    for row in x.astype(np.float32):
        total, split, leaf_start = 0.0, 0, 0
        for depth in trees.tree_depth:
            leaf = 0
            for level in range(depth):
                value = row[trees.split_feature[split + level]]
                bit = (bool(trees.nan_bit[split + level]) if np.isnan(value)
                       else bool(value > trees.border[split + level]))
                leaf |= int(bit) << level
            total += trees.leaf_value[leaf_start + leaf]
            split += depth
            leaf_start += 2 ** depth
        out.append(trees.scale[0] * total + trees.bias[0])
    return np.array(out)


def test_a_tree_without_splits_adds_its_one_leaf(fitted, data):
    """CatBoost exports a tree of depth 0 (no split gained; seen with Mordred's
    descriptors) as ``"splits": null`` and one leaf value, added to every row."""
    _, model, trees = fitted
    exported = _exported(model)
    first = exported["oblivious_trees"][0]
    rows = _test_rows(data["x"], trees)
    flat = ObliviousTrees.from_catboost_json(
        {**exported, "oblivious_trees": [{**first, "splits": None, "leaf_values": [0.25]}]},
        N_FEATURES)
    assert flat.tree_depth.tolist() == [0] and flat.split_feature.size == 0
    np.testing.assert_allclose(flat.decision(rows), flat.scale[0] * 0.25 + flat.bias[0],
                               rtol=0, atol=ATOL)
    mixed = ObliviousTrees.from_catboost_json(
        {**exported, "oblivious_trees": [{**first, "splits": None, "leaf_values": [0.25]},
                                         *exported["oblivious_trees"]]}, N_FEATURES)
    np.testing.assert_allclose(mixed.decision(rows),
                               trees.decision(rows) + trees.scale[0] * 0.25, rtol=0, atol=ATOL)


def test_mixed_depths_match_a_plain_walk():
    rng = np.random.default_rng(3)
    depth = rng.integers(0, 8, 40)
    n_splits, n_features = int(depth.sum()), 6
    trees = ObliviousTrees(
        n_features=n_features, split_feature=rng.integers(0, n_features, n_splits),
        border=rng.normal(size=n_splits).astype(np.float32),
        nan_bit=rng.integers(0, 2, n_splits).astype(np.uint8), tree_depth=depth,
        leaf_value=rng.normal(size=int((2 ** depth).sum())), scale=np.array([0.7]),
        bias=np.array([-0.2])).checked()
    rows = rng.normal(size=(200, n_features))
    rows[rng.random(rows.shape) < 0.2] = np.nan
    np.testing.assert_allclose(trees.decision(rows), _plain_walk(trees, rows), rtol=0,
                               atol=1e-12)


def test_constant_scores_its_value_everywhere():
    from safetensors.numpy import load, save

    trees = ObliviousTrees.constant(4, -1.25)
    rows = np.array([[0.0, np.nan, 1e9, -1.0], [1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(trees.decision(rows), [-1.25, -1.25])
    assert trees.tree_depth.size == 0
    loaded = ObliviousTrees.from_arrays(load(save(trees.arrays())))
    np.testing.assert_array_equal(loaded.decision(rows), [-1.25, -1.25])
    assert trees.decision(np.zeros((0, 4))).shape == (0,)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (4,)])
def test_decision_rejects_the_wrong_feature_count(shape):
    with pytest.raises(ValueError, match="4 features"):
        ObliviousTrees.constant(4, 0.0).decision(np.zeros(shape))


@pytest.mark.parametrize(("field", "value"), [
    ("leaf_value", np.zeros(3)),
    ("border", np.zeros(3, np.float32)),
    ("split_feature", np.array([0, 2])),
    ("split_feature", np.array([0.0, 1.0])),
    ("nan_bit", np.array([0, 2], np.uint8)),
    ("tree_depth", np.array([3])),
    ("scale", np.ones(2)),
    ("bias", np.array([np.nan])),
    ("border", np.array([np.nan, 0.0], np.float32)),
    ("n_features", 0),
])
def test_checked_names_a_corrupt_field(field, value):
    corrupt = _two_levels()._replace(**{field: value})
    with pytest.raises(ValueError, match=field):
        corrupt.checked()


def test_from_arrays_names_missing_and_unexpected_keys():
    arrays = _two_levels().arrays()
    del arrays["nan_bit"]
    with pytest.raises(ValueError, match="nan_bit"):
        ObliviousTrees.from_arrays(arrays)
    with pytest.raises(ValueError, match="extra"):
        ObliviousTrees.from_arrays({**_two_levels().arrays(), "extra": np.zeros(1)})
    arrays = _two_levels().arrays()
    arrays["leaf_value"] = arrays["leaf_value"][:3]
    with pytest.raises(ValueError, match="leaf_value"):
        ObliviousTrees.from_arrays(arrays)
