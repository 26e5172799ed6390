"""exlm_chem.model.frozen_trees: the tree head's members and how their outputs are mixed.

``decision_of`` reads states and unscaled features computed already, so the encoder is not
run here (``model`` is never called).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, logit

from exlm_chem.data.descriptors import feature_names
from exlm_chem.model.frozen_trees import FrozenTrees, mean_logit
from exlm_chem.model.tree_head import ForestHead

N_ROWS, N_STATE, SEED = 80, 4, 3


@pytest.fixture(scope="module")
def rows() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    n_features = len(feature_names("rdkit2d"))
    raw = rng.normal(size=(N_ROWS, n_features)) * rng.uniform(0.1, 10, n_features)
    states = rng.normal(size=(N_ROWS, N_STATE)).astype(np.float32)
    labels = np.stack([(raw[:, 0] + states[:, 0] > 0).astype(np.float64),
                       (raw[:, 1] > 0).astype(np.float64)], axis=1)
    labels[rng.random(labels.shape) < 0.2] = np.nan
    return {"raw": raw, "states": states, "labels": labels,
            "train": np.arange(N_ROWS - 20), "held_out": np.arange(N_ROWS - 20, N_ROWS)}


KINDS = ("rdkit2d",)
QUICK = {"iterations": 30}  # CatBoost's trees of a test: as many as show the walk


@pytest.fixture(scope="module")
def plain(rows) -> FrozenTrees:
    return FrozenTrees.fit(None, rows["states"], rows["raw"], rows["labels"], rows["train"],
                           "classification", SEED, kinds=KINDS, booster="hist")


@pytest.fixture(scope="module")
def with_forest(rows) -> FrozenTrees:
    return FrozenTrees.fit(None, rows["states"], rows["raw"], rows["labels"], rows["train"],
                           "classification", SEED, kinds=KINDS, forest=True, booster="hist")


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_catboost_reads_the_raw_features_and_the_states_only_when_asked(rows, task):
    labels = rows["labels"] if task == "classification" else (
        rows["labels"] + rows["raw"][:, :2] / 10)
    held = rows["held_out"]
    without = FrozenTrees.fit(None, None, rows["raw"], labels, rows["train"], task, SEED,
                              kinds=KINDS, booster_params=QUICK)
    assert without.model is None and not without.reads_states
    assert without.trees.booster == "catboost" and without.trees.n_features == 217
    np.testing.assert_array_equal(without.decision_of(rows["states"][held], rows["raw"][held]),
                                  without.trees.decision(rows["raw"][held]))  # raw, unscaled
    marker = object()  # the encoder travels with the head once the trees read its states
    with_states = FrozenTrees.fit(marker, rows["states"], rows["raw"], labels, rows["train"],
                                  task, SEED, kinds=KINDS, booster_params=QUICK)
    assert with_states.model is marker and with_states.reads_states
    assert with_states.trees.n_features == N_STATE + 217
    side_by_side = np.concatenate([rows["states"][held], rows["raw"][held]], axis=1)
    np.testing.assert_array_equal(with_states.decision_of(rows["states"][held],
                                                          rows["raw"][held]),
                                  with_states.trees.decision(side_by_side))


def test_catboost_settings_are_refused_for_the_hist_booster(rows):
    with pytest.raises(ValueError, match="booster_params are CatBoost's"):
        FrozenTrees.fit(None, None, rows["raw"], rows["labels"], rows["train"],
                        "classification", SEED, kinds=KINDS, booster="hist",
                        booster_params=QUICK)


def test_without_a_forest_the_boosted_trees_answer_alone(rows, plain):
    head = plain
    assert head.forest is None
    held = rows["held_out"]
    scaled = head.features.scaler.transform(rows["raw"][held])  # [n, F]
    boosted = head.trees.decision(np.concatenate([rows["states"][held], scaled], axis=1))
    np.testing.assert_array_equal(head.decision_of(rows["states"][held], rows["raw"][held]),
                                  boosted)


def test_with_a_forest_the_head_is_the_logit_of_the_members_mean(rows, plain, with_forest):
    head = with_forest
    held = rows["held_out"]
    scaled = head.features.scaler.transform(rows["raw"][held])  # [n, F]
    # the forest reads the scaled descriptors alone, fitted on the training rows
    assert head.forest.n_features == scaled.shape[1]
    assert head.trees.n_features == N_STATE + scaled.shape[1]
    train = rows["train"]
    alone = ForestHead.fit(head.features.scaler.transform(rows["raw"][train]),
                           rows["labels"][train], SEED)
    forest = head.forest.proba(scaled)
    np.testing.assert_array_equal(forest, alone.proba(scaled))
    boosted = plain.decision_of(rows["states"][held], rows["raw"][held])  # same trees
    out = head.decision_of(rows["states"][held], rows["raw"][held])
    assert out.shape == (len(held), 2)
    np.testing.assert_allclose(out, logit((expit(boosted) + forest) / 2), rtol=0, atol=1e-12)
    assert not np.allclose(out, boosted, atol=1e-3)  # the forest moved the outputs


def test_the_mean_logit_stays_finite_where_both_members_are_sure():
    logits = np.array([[800.0, -800.0, 0.0]])
    out = mean_logit(logits, np.array([[1.0, 0.0, 0.5]]))
    assert np.isfinite(out).all()
    assert out[0, 0] > 36 and out[0, 1] < -700 and out[0, 2] == 0.0
    np.testing.assert_allclose(mean_logit(np.array([[np.log(3.0)]]), np.array([[0.25]])),
                               [[0.0]], atol=1e-15)  # (0.75 + 0.25) / 2


def test_the_forest_is_for_classification_only(rows):
    values = np.nan_to_num(rows["labels"]) + rows["raw"][:, :2]
    with pytest.raises(ValueError, match="forest is for classification only"):
        FrozenTrees.fit(None, rows["states"], rows["raw"], values, rows["train"],
                        "regression", SEED, kinds=KINDS, forest=True)
