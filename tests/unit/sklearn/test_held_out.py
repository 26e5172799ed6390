"""exlm_chem.sklearn.held_out: whole scaffolds held out, and the weight they choose."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data.splits import murcko_scaffolds
from exlm_chem.sklearn.held_out import TREE_WEIGHTS, held_out_split, held_out_tree_weight

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
