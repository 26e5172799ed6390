"""exlm_chem.model.tree_head (and task_trees): trees saved as arrays, walked as sklearn does.

Every score is compared with scikit-learn's own ``decision_function``/``predict`` of the same
fitted models, on fresh rows with NaN and infinite features, so a wrong traversal rule fails.
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import load, save
from scipy.special import expit
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
)

from exlm_chem.model.task_trees import TaskTrees
from exlm_chem.model.tree_head import FOREST_SETTINGS, ForestHead, TreeHead

N_ROWS, N_FEATURES, SEED = 300, 12, 7


def _features(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=(n, N_FEATURES))
    x[rng.random(x.shape) < 0.1] = np.nan  # missing features everywhere
    return x


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = _features(rng, N_ROWS)
    signal = np.nan_to_num(x[:, 0]) + 0.5 * np.nan_to_num(x[:, 1] * x[:, 2])
    # feature 3 missing means positive: the trees learn a split on NaN (threshold +inf)
    x[: N_ROWS // 3, 3] = np.nan
    nan_3 = np.isnan(x[:, 3])
    labels = np.stack([
        (signal + rng.normal(scale=0.5, size=N_ROWS) > 0).astype(np.float64),
        (nan_3 ^ (np.nan_to_num(x[:, 4]) > 1)).astype(np.float64),
        np.zeros(N_ROWS),  # one class only: no trees
    ], axis=1)
    labels[rng.random(labels.shape) < 0.2] = np.nan  # missing labels
    values = np.stack([signal + rng.normal(scale=0.1, size=N_ROWS),
                       np.where(nan_3, 3.0, np.nan_to_num(x[:, 5]))], axis=1)
    values[rng.random(values.shape) < 0.2] = np.nan
    fresh = _features(np.random.default_rng(1), 200)
    fresh[:5] = np.nan  # rows missing every feature
    fresh[5:10, :4] = np.inf
    fresh[10:15, :4] = -np.inf
    return {"x": x, "labels": labels, "values": values, "fresh": fresh}


@pytest.fixture(scope="module")
def classifier(data) -> TreeHead:
    return TreeHead.fit(data["x"], data["labels"], "classification", SEED)


@pytest.fixture(scope="module")
def regressor(data) -> TreeHead:
    return TreeHead.fit(data["x"], data["values"], "regression", SEED)


def _sklearn_scores(data, labels: np.ndarray, estimator_type) -> list[np.ndarray | None]:
    """Per task, sklearn's raw scores on the fresh rows, fitted as TreeHead.fit documents
    (None for a task sklearn cannot fit)."""
    scores = []
    for t in range(labels.shape[1]):
        known = ~np.isnan(labels[:, t])
        y = labels[known, t]
        if estimator_type is HistGradientBoostingClassifier and np.unique(y).size < 2:
            scores.append(None)
            continue
        model = estimator_type(random_state=SEED + 1000 * t).fit(data["x"][known], y)
        if estimator_type is HistGradientBoostingClassifier:
            scores.append(model.decision_function(data["fresh"]))
        else:
            scores.append(model.predict(data["fresh"]))
    return scores


def test_classification_scores_are_sklearn_decision_function(data, classifier):
    assert (classifier.n_tasks, classifier.n_features) == (3, N_FEATURES)
    ours = classifier.decision(data["fresh"])
    assert ours.shape == (200, 3) and ours.dtype == np.float64
    expected = _sklearn_scores(data, data["labels"], HistGradientBoostingClassifier)
    for t in (0, 1):
        np.testing.assert_allclose(ours[:, t], expected[t], rtol=0, atol=1e-10)
    assert expected[2] is None
    np.testing.assert_allclose(ours[:, 2], np.log(1e-3 / (1 - 1e-3)), rtol=0, atol=1e-12)


def test_regression_scores_are_sklearn_predict(data, regressor):
    ours = regressor.decision(data["fresh"])
    expected = _sklearn_scores(data, data["values"], HistGradientBoostingRegressor)
    for t in range(2):
        np.testing.assert_allclose(ours[:, t], expected[t], rtol=0, atol=1e-10)


def test_the_walk_covers_nan_splits_and_both_missing_directions(classifier, regressor):
    # guards the comparisons above: the data must exercise every branch of the rule
    for head in (classifier, regressor):
        trees = head.trees[1]
        split = trees.is_leaf == 0
        assert np.isposinf(trees.threshold[split]).any()  # a split on NaN
        assert set(np.unique(trees.missing_left[split])) == {0, 1}


def test_one_exported_estimator_matches_it_exactly(data):
    known = ~np.isnan(data["labels"][:, 1])
    model = HistGradientBoostingClassifier(random_state=3, max_depth=4)
    model.fit(data["x"][known], data["labels"][known, 1])
    head = TreeHead("classification", [TaskTrees.from_estimator(model, N_FEATURES)])
    np.testing.assert_allclose(head.decision(data["fresh"])[:, 0],
                               model.decision_function(data["fresh"]), rtol=0, atol=1e-10)
    # the comparison can fail: sending NaN the other way changes rows with NaN features
    trees = head.trees[0]
    flipped = TreeHead("classification", [trees._replace(missing_left=1 - trees.missing_left)])
    assert not np.allclose(flipped.decision(data["fresh"])[:, 0],
                           model.decision_function(data["fresh"]), rtol=0, atol=1e-10)


def test_arrays_round_trip_through_safetensors(data, classifier, regressor):
    for head, task in ((classifier, "classification"), (regressor, "regression")):
        arrays = head.arrays()
        assert {"n_tasks", "n_features", "t0.feature", "t0.threshold", "t0.left", "t0.right",
                "t0.value", "t0.missing_left", "t0.is_leaf", "t0.tree_start",
                "t0.baseline"} <= set(arrays)
        for name, array in arrays.items():
            assert array.flags.c_contiguous, name
            assert array.dtype in (np.int64, np.float64, np.uint8), name
        loaded = TreeHead.from_arrays(task, load(save(arrays)))
        assert (loaded.n_tasks, loaded.n_features) == (head.n_tasks, head.n_features)
        np.testing.assert_array_equal(loaded.decision(data["fresh"]),
                                      head.decision(data["fresh"]))


def test_constant_tasks_score_their_documented_constant():
    x = np.random.default_rng(2).normal(size=(20, 3))
    labels = np.full((20, 4), np.nan)
    labels[:, 0] = 1.0  # all positive
    labels[:5, 1] = 0.0  # all negative, mostly unlabelled
    # column 2: no labels at all
    labels[:, 3] = np.arange(20) % 2  # two classes: gets trees
    head = TreeHead.fit(x, labels, "classification", 0)
    scores = head.decision(x)
    np.testing.assert_allclose(scores[:, 0], np.log(0.999 / 0.001), rtol=1e-12)
    np.testing.assert_allclose(scores[:, 1], np.log(0.001 / 0.999), rtol=1e-12)
    np.testing.assert_array_equal(scores[:, 2], 0.0)
    assert [t.tree_start.size - 1 for t in head.trees][:3] == [0, 0, 0]
    assert head.trees[3].tree_start.size > 1

    values = np.full((20, 2), np.nan)
    values[:, 0] = np.arange(20.0)
    regression = TreeHead.fit(x, values, "regression", 0)
    np.testing.assert_array_equal(regression.decision(x)[:, 1], 0.0)
    reloaded = TreeHead.from_arrays("regression", load(save(regression.arrays())))
    np.testing.assert_array_equal(reloaded.decision(x), regression.decision(x))


def test_bad_inputs_raise_value_errors_naming_the_problem(data, classifier):
    x, labels = data["x"], data["labels"]
    with pytest.raises(ValueError, match=r"task must be one of .* got 'multiclass'"):
        TreeHead.fit(x, labels, "multiclass", 0)
    with pytest.raises(ValueError, match="x has 300 rows but labels have 299"):
        TreeHead.fit(x, labels[:-1], "classification", 0)
    with pytest.raises(ValueError, match="labels must be 2-D"):
        TreeHead.fit(x, labels[:, 0], "classification", 0)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        TreeHead.fit(x, np.where(np.isnan(labels), labels, 2.0), "classification", 0)
    with pytest.raises(ValueError, match="x has 11 features, the head was fitted on 12"):
        classifier.decision(data["fresh"][:, :-1])
    with pytest.raises(ValueError, match="x must be 2-D"):
        classifier.decision(data["fresh"][0])
    with pytest.raises(ValueError, match="task must be one of"):
        TreeHead("binary", classifier.trees)
    arrays = classifier.arrays()
    with pytest.raises(ValueError, match="hold a classification head, loaded as regression"):
        TreeHead.from_arrays("regression", arrays)
    with pytest.raises(ValueError, match=r"missing \['t1.value'\]"):
        TreeHead.from_arrays("classification",
                             {k: v for k, v in arrays.items() if k != "t1.value"})


def test_corrupt_arrays_are_refused_before_any_walk(classifier):
    arrays = classifier.arrays()
    split = int(np.flatnonzero(arrays["t0.is_leaf"] == 0)[0])
    for key, value, message in (
        ("t0.left", split, "'left' children must lie after their node"),  # a loop
        ("t0.right", arrays["t0.tree_start"][1], "'right' children must lie after"),
        ("t0.feature", N_FEATURES, r"splits must read features 0\.\.11"),
    ):
        broken = {k: v.copy() for k, v in arrays.items()}
        broken[key][split] = value
        with pytest.raises(ValueError, match=message):
            TreeHead.from_arrays("classification", broken)
    broken = dict(arrays, **{"t0.tree_start": arrays["t0.tree_start"][:-1]})
    with pytest.raises(ValueError, match="tree_start must rise from 0 to the node count"):
        TreeHead.from_arrays("classification", broken)


def test_categorical_splits_are_refused():
    rng = np.random.default_rng(3)
    x = np.stack([rng.integers(0, 4, 200), rng.normal(size=200)], axis=1).astype(np.float64)
    y = (x[:, 0] % 2 == 0).astype(np.int64)
    model = HistGradientBoostingClassifier(categorical_features=[0], max_iter=3).fit(x, y)
    with pytest.raises(ValueError, match="categorical"):
        TaskTrees.from_estimator(model, 2)


# ---- the random forest head ----------------------------------------------------------------

@pytest.fixture(scope="module")
def forest(data) -> ForestHead:
    return ForestHead.fit(data["x"], data["labels"], SEED)


def _sklearn_forest(data, t: int) -> RandomForestClassifier:
    """Task ``t``'s forest, fitted as ForestHead.fit documents."""
    known = ~np.isnan(data["labels"][:, t])
    model = RandomForestClassifier(random_state=SEED + 1000 * t, **FOREST_SETTINGS)
    return model.fit(data["x"][known], data["labels"][known, t].astype(np.int64))


def _tie_rows(data, model: RandomForestClassifier, n_trees: int = 3) -> np.ndarray:
    """Rows that meet split thresholds exactly: per split node of the first trees, a
    training row reaching it with the node's feature set to its threshold (a float64
    midpoint between float32 values), or to that threshold rounded to float32."""
    x = data["x"]  # every node is reached by some training row
    rows = []
    for estimator in model.estimators_[:n_trees]:
        tree = estimator.tree_
        paths = estimator.decision_path(x.astype(np.float32)).toarray().astype(bool)
        # a split of NaNs from numbers has threshold +inf, and sklearn refuses inf rows
        for node in np.flatnonzero((tree.children_left != -1) & np.isfinite(tree.threshold)):
            row = x[np.flatnonzero(paths[:, node])[0]].copy()
            for value in (tree.threshold[node], np.float32(tree.threshold[node])):
                row[tree.feature[node]] = value
                rows.append(row.copy())
    return np.array(rows)  # [n_ties, F]


def test_forest_probabilities_are_sklearn_predict_proba(data, forest):
    assert (forest.n_tasks, forest.n_features) == (3, N_FEATURES)
    fresh = data["fresh"][~np.isinf(data["fresh"]).any(axis=1)]  # sklearn refuses inf
    for t in (0, 1):
        model = _sklearn_forest(data, t)
        ties = _tie_rows(data, model)
        rows = np.concatenate([fresh, ties])  # [n, F]: NaNs, rows of NaN only, exact ties
        proba = forest.proba(rows)
        assert proba.shape == (len(rows), 3) and proba.dtype == np.float64
        np.testing.assert_allclose(proba[:, t], model.predict_proba(rows)[:, 1],
                                   rtol=0, atol=1e-12)
        # the comparison can fail: walked on unrounded float64 rows, ties go the other way
        trees = forest.trees[t]
        assert not np.allclose(trees.decision(ties),
                               trees.decision(ties.astype(np.float32).astype(np.float64)),
                               rtol=0, atol=1e-12)


def test_the_forest_walk_covers_both_missing_directions(forest):
    # guards the comparison above: NaN rows meet splits sending them either way
    split = forest.trees[1].is_leaf == 0
    assert set(np.unique(forest.trees[1].missing_left[split])) == {0, 1}
    assert forest.trees[0].baseline[0] == 0.0


def test_forest_leaves_are_class_weighted_shares(data, forest):
    # scikit-learn keeps balanced-weighted class fractions per leaf (not counts): summed
    # over the 100 trees, each leaf's value is a share in [0, 1] over 100
    model = _sklearn_forest(data, 0)
    value = model.estimators_[0].tree_.value[:, 0, :]  # [M, 2]
    np.testing.assert_allclose(value.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    trees = forest.trees[0]
    leaf = trees.is_leaf == 1
    n_trees = FOREST_SETTINGS["n_estimators"]
    assert trees.tree_start.size - 1 == n_trees
    assert np.all((trees.value[leaf] >= 0) & (trees.value[leaf] <= 1 / n_trees + 1e-15))
    assert np.all(trees.value[~leaf] == 0)


def test_single_class_forest_tasks_score_the_boosted_trees_constant():
    x = np.random.default_rng(2).normal(size=(20, 3))
    labels = np.full((20, 4), np.nan)
    labels[:, 0] = 1.0  # all positive
    labels[:5, 1] = 0.0  # all negative, mostly unlabelled
    # column 2: no labels at all
    labels[:, 3] = np.arange(20) % 2  # two classes: gets a forest
    forest = ForestHead.fit(x, labels, 0)
    proba = forest.proba(x)
    np.testing.assert_array_equal(proba[:, :3], np.tile([0.999, 0.001, 0.5], (20, 1)))
    assert [t.tree_start.size - 1 for t in forest.trees] == [0, 0, 0, 100]
    boosted = TreeHead.fit(x, labels, "classification", 0).decision(x)
    np.testing.assert_allclose(proba[:, :3], expit(boosted[:, :3]), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        ForestHead.fit(x, np.where(np.isnan(labels), labels, 2.0), 0)


def test_forest_arrays_round_trip_and_are_not_boosted_trees(data, forest, classifier):
    arrays = forest.arrays()
    assert arrays["forest"] == 1 and "classification" not in arrays
    for name, array in arrays.items():
        assert array.flags.c_contiguous, name
        assert array.dtype in (np.int64, np.float64, np.uint8), name
    loaded = ForestHead.from_arrays(load(save(arrays)))
    np.testing.assert_array_equal(loaded.proba(data["fresh"]), forest.proba(data["fresh"]))
    with pytest.raises(ValueError, match="lack 'forest'"):
        ForestHead.from_arrays(classifier.arrays())
    with pytest.raises(ValueError, match="lack 'classification'"):
        TreeHead.from_arrays("classification", arrays)
    with pytest.raises(ValueError, match="x has 11 features"):
        forest.proba(data["fresh"][:, :-1])


def test_the_forest_settings_are_the_benchmark_runners():
    from exlm_chem.benchmark.rf import RandomForestSettings

    runner = RandomForestSettings()
    assert FOREST_SETTINGS == {name: getattr(runner, name) for name in FOREST_SETTINGS}
