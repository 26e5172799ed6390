"""exlm_chem.sklearn.ensemble: whole scaffolds held out, the weight they choose, and how
the outputs combine."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, logit

from exlm_chem.data.feature_spec import raw_features
from exlm_chem.data.splits import held_out_split, most_held_out, murcko_scaffolds
from exlm_chem.model.frozen_trees import FrozenTrees
from exlm_chem.sklearn.ensemble import (
    AUTO_CHOICES,
    AUTO_MIN_HELD_OUT,
    AUTO_TREE_WEIGHT,
    TREE_WEIGHTS,
    aggregate,
    average,
    choose_tree_weight,
    classifier_logits,
    combined,
    decide_on_held_out,
    fit_tree_head,
    held_out_tree_weight,
    mix,
    reads_held_out_trees,
    resolve_tree_weight,
    tree_weight_choices,
    uses_forest,
)
from exlm_chem.threads import resolve_threads

# 12 scaffolds of 5 molecules each (a ring with a substituent that varies), and acyclic
# molecules, whose scaffold is the empty one
RINGS = ["c1ccccc1", "C1CCCCC1", "c1ccncc1", "C1CCOC1", "c1ccoc1", "c1ccsc1", "C1CCNCC1",
         "c1cnccn1", "C1CC1", "C1CCC1", "c1ccc2ccccc2c1", "C1CCCCCC1"]
TAILS = ["C", "CC", "CCC", "CO", "CN"]


@pytest.fixture(scope="module")
def smiles() -> list[str]:
    return [f"{tail}{ring}" for ring in RINGS for tail in TAILS]


def test_held_out_rows_are_whole_scaffolds_near_the_share_asked(smiles):
    split = held_out_split(smiles, 0, 0.2)
    scaffolds = np.array(murcko_scaffolds(smiles))
    held = set(scaffolds[split.valid_rows])
    assert held.isdisjoint(scaffolds[split.train_rows])  # no scaffold on both sides
    assert 0 < len(split.valid_rows) <= 2 * round(0.2 * len(smiles))
    assert sorted([*split.train_rows, *split.valid_rows]) == list(range(len(smiles)))


def test_the_split_is_seeded(smiles):
    first, again = held_out_split(smiles, 3, 0.2), held_out_split(smiles, 3, 0.2)
    np.testing.assert_array_equal(first.valid_rows, again.valid_rows)
    assert first.seed == again.seed
    others = {tuple(held_out_split(smiles, s, 0.2).valid_rows) for s in range(6)}
    assert len(others) > 1  # seeds draw other scaffolds


def test_one_scaffold_holding_most_molecules_falls_back_to_random_rows():
    smiles = [f"C{'C' * i}O" for i in range(40)] + ["c1ccccc1"]  # acyclic: one scaffold
    split = held_out_split(smiles, 0, 0.1)
    assert len(split.valid_rows) == 4
    assert len(split.train_rows) == 37


def test_nothing_is_held_out_when_the_share_rounds_to_none(smiles):
    split = held_out_split(smiles[:4], 0, 0.1)
    assert len(split.valid_rows) == 0 and list(split.train_rows) == [0, 1, 2, 3]


def test_the_weight_is_chosen_from_both_ends_for_each_task_kind():
    labels = np.array([[0.0], [1.0], [1.0], [0.0], [np.nan]])
    good = np.array([[0.1], [0.9], [0.8], [0.2], [0.5]])
    bad = 1 - good
    for task in ("classification", "regression"):
        assert held_out_tree_weight(bad, good, labels, task) == 1.0  # the trees alone
        assert held_out_tree_weight(good, bad, labels, task) == 0.0  # the network alone
    # equal members: the first of equals
    assert held_out_tree_weight(good, good, labels, "classification") == TREE_WEIGHTS[0]


def test_the_classifier_weight_reads_log_loss_not_squared_error():
    # one confident miss costs the log loss far more than the squared error
    labels = np.array([[1.0], [1.0], [0.0], [0.0]])
    net = np.array([[0.0], [0.99], [0.01], [0.01]])  # sure and once entirely wrong
    trees = np.array([[0.3], [0.7], [0.3], [0.3]])  # never sure
    assert held_out_tree_weight(net, trees, labels, "classification") > 0.0
    assert held_out_tree_weight(net, trees, labels, "regression") < 1.0


def test_the_forest_stands_beside_the_classifiers_histogram_boosting_unless_told():
    assert uses_forest("classification", True, None, "hist")
    assert not uses_forest("classification", True, None, "catboost")
    assert not uses_forest("regression", True, None, "hist")
    assert not uses_forest("classification", False, None, "hist")
    assert uses_forest("classification", True, True, "catboost")  # asked for
    assert not uses_forest("classification", True, False, "hist")


def test_a_listed_tree_weight_is_chosen_from_those_listed_only():
    assert tree_weight_choices(0.75) is None  # given
    assert tree_weight_choices(None) == TREE_WEIGHTS
    assert tree_weight_choices([0.75, 1]) == (0.75, 1.0)
    labels = np.array([[0.0], [1.0], [1.0], [0.0]])
    good, bad = np.array([[0.1], [0.9], [0.8], [0.2]]), np.array([[0.9], [0.1], [0.2], [0.8]])
    # the network alone would be best, but the list starts at three quarters to the trees
    assert held_out_tree_weight(good, bad, labels, "classification", (0.75, 1.0)) == 0.75
    assert held_out_tree_weight(bad, good, labels, "classification", (0.75, 1.0)) == 1.0


@pytest.mark.parametrize(("tree_weight", "held_out", "expected"), [
    ((0.75, 1.0), True, 1.0),  # the trees are the better member: chosen alone
    ((0.75, 1.0), False, 0.75),  # nothing held out: the first listed
    (None, False, 0.5),  # nothing held out: DEFAULT_TREE_WEIGHT
    (0.25, True, 0.25),  # given: not chosen
])
def test_the_weight_decided_on_the_held_out_molecules(tree_weight, held_out, expected):
    labels = np.array([[0.0], [1.0], [1.0], [0.0]])
    trees = logit(np.array([[0.1], [0.9], [0.8], [0.2]]))  # raw outputs, as fit keeps them
    samples = -trees[None, None]  # [M=1, V=1, n, T]: a network wrong on every molecule
    decided = decide_on_held_out("classification", tree_weight, None, None, trees,
                                 labels if held_out else None, lambda: samples)
    assert decided.tree_weight == expected
    assert (decided.choice is not None) == (held_out and tree_weight != 0.25)


@pytest.mark.parametrize(("task", "booster", "n_held_out", "expected"), [
    ("classification", "catboost", AUTO_MIN_HELD_OUT, AUTO_CHOICES),  # enough: chosen
    ("classification", "catboost", AUTO_MIN_HELD_OUT - 1, AUTO_TREE_WEIGHT),  # too few
    ("classification", "hist", 10 * AUTO_MIN_HELD_OUT, AUTO_TREE_WEIGHT),  # many tasks
    ("regression", "catboost", 10 * AUTO_MIN_HELD_OUT, AUTO_TREE_WEIGHT),
])
def test_auto_lets_only_a_classifiers_catboost_on_enough_molecules_drop_the_network(
        task, booster, n_held_out, expected):
    assert AUTO_CHOICES == (0.75, 1.0) and AUTO_TREE_WEIGHT == 0.75
    assert resolve_tree_weight("auto", task, booster, n_held_out) == expected
    for given in (0.5, (0.25, 1.0), None):  # anything else stays as given
        assert resolve_tree_weight(given, task, booster, n_held_out) == given
    with pytest.raises(TypeError, match="resolve"):
        tree_weight_choices("auto")


@pytest.mark.parametrize("share", [0.1, 0.2])
def test_the_split_holds_out_no_more_than_its_bound(smiles, share):
    for seed in range(5):
        split = held_out_split(smiles, seed, share)
        assert 0 < len(split.valid_rows) <= most_held_out(len(smiles), share)
    one_scaffold = ["c1ccccc1" + "C" * i for i in range(1, 40)] + ["CCO"]
    assert len(held_out_split(one_scaffold, 0, share).valid_rows) <= most_held_out(40, share)


def test_the_held_out_molecules_read_the_trees_when_something_needs_the_prediction():
    assert reads_held_out_trees("classification", None, None)  # the weight is chosen
    assert reads_held_out_trees("classification", (0.75, 1.0), None)  # chosen from two
    assert reads_held_out_trees("regression", 0.5, None)  # conformity scores
    assert reads_held_out_trees("classification", 0.5, "isotonic")  # calibration
    assert not reads_held_out_trees("classification", 0.5, None)


@pytest.fixture(scope="module")
def outputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 3, 5, 2)), rng.normal(size=(5, 2))  # [M, V, n, T], [n, T]


def test_the_classifier_chooses_on_probabilities_the_regressor_on_raw_values(outputs):
    samples, trees = outputs
    labels = (trees > 0).astype(float)
    labels[0, 1] = np.nan
    proba = choose_tree_weight(samples, trees, labels, "classification")
    np.testing.assert_array_equal(proba.network, expit(samples).mean(axis=(0, 1)))
    np.testing.assert_array_equal(proba.trees, expit(trees))
    assert proba.weight == held_out_tree_weight(proba.network, proba.trees, labels,
                                                "classification")
    values = choose_tree_weight(samples, trees, trees, "regression")
    np.testing.assert_array_equal(values.network, samples.mean(axis=(0, 1)))
    assert values.trees is trees and values.weight == 1.0  # the trees are the labels


def test_outputs_combine_on_their_output_scale(outputs):
    samples, trees = outputs
    proba = combined(samples, trees, 0.25, "classification", None)
    network = expit(samples).mean(axis=(0, 1))  # the members' probabilities averaged
    # then mixed with the trees' in log-odds
    np.testing.assert_allclose(proba, expit(0.75 * np.log(network / (1 - network))
                                            + 0.25 * trees))
    np.testing.assert_allclose(aggregate(samples, trees, 0.25, "classification", None, None),
                               logit(proba))
    log = np.array([True, False])  # the first task learned on log y
    values = aggregate(samples, trees, 0.25, "regression", log, None)
    expected = 0.75 * samples.mean(axis=(0, 1)) + 0.25 * trees
    np.testing.assert_allclose(values[:, 1], expected[:, 1])
    np.testing.assert_allclose(values[:, 0], 0.75 * np.exp(samples[..., 0]).mean(axis=(0, 1))
                               + 0.25 * np.exp(trees[:, 0]))  # averaged on y's scale
    np.testing.assert_array_equal(average(samples, None, 0.25, "regression"),
                                  samples.mean(axis=(0, 1)))


def test_the_classifier_mixes_log_odds_the_regressor_values():
    network, trees = np.array([[0.99], [0.3]]), np.array([[0.5], [0.3]])
    proba = mix(network, trees, 0.75, "classification")
    # the sure network moves the mix further than its quarter of the probability would
    assert proba[0, 0] == pytest.approx(expit(0.25 * logit(0.99)))
    assert proba[0, 0] > 0.25 * 0.99 + 0.75 * 0.5
    assert proba[1, 0] == pytest.approx(0.3)  # agreeing members: their own probability
    for w, expected in ((0.0, network), (1.0, trees)):
        np.testing.assert_allclose(mix(network, trees, w, "classification"), expected)
    np.testing.assert_allclose(mix(network, trees, 0.75, "regression"),
                               0.25 * network + 0.75 * trees)


def test_one_network_alone_keeps_its_own_logits(outputs):
    samples, _ = outputs
    one = samples[:1, :1]
    np.testing.assert_array_equal(classifier_logits(one, None, 0.5, None), one[0, 0])


def test_catboost_is_refitted_on_every_molecule_histogram_boosting_is_not(smiles):
    n = len(smiles)
    labels = np.arange(n, dtype=float)[:, None] % 7  # [n, 1]
    split = held_out_split(smiles, 0, 0.2)
    rows = {"train": split.train_rows, "all": np.arange(n)}
    for booster, kept in (("catboost", "all"), ("hist", "train")):
        params = {"iterations": 10} if booster == "catboost" else None
        fit = fit_tree_head(("rdkit2d",), None, None, smiles, None, labels, split,
                            "regression", booster, forest=False, tree_params=params,
                            score_held_out=True, n_jobs=1)
        raw = raw_features(("rdkit2d",), smiles, None)  # [n, F]
        first, again = (FrozenTrees.fit(None, None, raw, labels, rows[part], "regression",
                                        split.seed, kinds=("rdkit2d",), booster=booster,
                                        threads=resolve_threads(), booster_params=params)
                        for part in ("train", kept))
        valid = split.valid_rows
        np.testing.assert_array_equal(fit.held_out, first.decision_of(None, raw[valid]))
        np.testing.assert_array_equal(fit.head.decision_of(None, raw),
                                      again.decision_of(None, raw))
    none_read = fit_tree_head(("rdkit2d",), None, None, smiles, None, labels, split,
                              "regression", "hist", forest=False, tree_params=None,
                              score_held_out=False, n_jobs=1)
    assert none_read.held_out is None
