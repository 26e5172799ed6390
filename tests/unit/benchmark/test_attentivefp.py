"""AttentiveFP baseline: fits real molecules, reproducible, honours the budget, masks NaN."""

from __future__ import annotations

import itertools
from dataclasses import asdict

import numpy as np
import pytest
import torch

import exlm_chem
from exlm_chem.benchmark import attentivefp
from exlm_chem.benchmark.attentivefp import AttentiveFPSettings, attentivefp_method
from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.metrics import mean_roc_auc

# small enough to train in about a second per run on one thread
TINY = AttentiveFPSettings(hidden_channels=16, num_layers=2, num_timesteps=2, dropout=0.2,
                           batch_size=10, epochs=3)  # fmt: skip


@pytest.fixture(scope="module")
def bbbp40(moleculenet_dir) -> TaskData:
    """20 permeable and 20 impermeable BBBP molecules; train = valid = test = all 40."""
    dataset = exlm_chem.load_moleculenet("bbbp", path=moleculenet_dir)
    y = dataset.labels[:, 0]
    rows = np.concatenate([np.flatnonzero(y == 1)[:20], np.flatnonzero(y == 0)[:20]])
    everything = np.arange(40)
    return TaskData("bbbp", [dataset.smiles[i] for i in rows],
                    dataset.labels[rows].astype(np.float64), everything, everything, everything)


def test_overfits_forty_molecules(bbbp40):
    settings = AttentiveFPSettings(hidden_channels=64, dropout=0.0, batch_size=10, epochs=40)
    out = attentivefp_method(bbbp40, seed=0, budget=Budget(), settings=settings)
    assert out.test_scores.shape == (40, 1)
    assert ((out.test_scores > 0) & (out.test_scores < 1)).all()  # sigmoid probabilities
    assert mean_roc_auc(bbbp40.labels, out.test_scores).mean > 0.95
    assert out.epochs == 40 and 1 <= out.best_epoch <= 40 and not out.stopped_early
    assert out.settings == asdict(settings)


def test_same_seed_same_scores(bbbp40):
    rng_before = torch.random.get_rng_state()
    first = attentivefp_method(bbbp40, seed=3, budget=Budget(), settings=TINY)
    # the caller's torch generator is forked, not consumed
    assert torch.equal(torch.random.get_rng_state(), rng_before)
    again = attentivefp_method(bbbp40, seed=3, budget=Budget(), settings=TINY)
    other = attentivefp_method(bbbp40, seed=4, budget=Budget(), settings=TINY)
    np.testing.assert_array_equal(first.test_scores, again.test_scores)
    assert first.best_epoch == again.best_epoch
    assert np.abs(first.test_scores - other.test_scores).max() > 1e-3


def test_max_epochs_caps_the_settings(bbbp40):
    out = attentivefp_method(bbbp40, seed=0, budget=Budget(max_epochs=2), settings=TINY)
    assert out.epochs == 2 and 1 <= out.best_epoch <= 2 and not out.stopped_early
    assert out.settings["epochs"] == 3  # the preset is recorded as it was, the cap apart


def test_max_minutes_stops_after_the_step_that_spends_it(bbbp40, monkeypatch):
    settings = AttentiveFPSettings(hidden_channels=16, batch_size=4, epochs=5)  # 10 steps/epoch
    out = attentivefp_method(bbbp40, seed=0, budget=Budget(max_minutes=0.0001),
                             settings=settings)
    assert out.epochs == 1 and out.stopped_early
    assert out.best_epoch == 1  # the partial epoch was validated (and beat nothing)
    assert out.test_scores.shape == (40, 1) and np.isfinite(out.test_scores).all()

    # a clock that moves one second per reading: exactly one training step fits
    monkeypatch.setattr(attentivefp, "_clock", itertools.count().__next__)
    forward, training_steps = attentivefp._forward, []

    def counting_forward(model, batch):
        if model.training:
            training_steps.append(batch.num_graphs)
        return forward(model, batch)

    monkeypatch.setattr(attentivefp, "_forward", counting_forward)
    out = attentivefp_method(bbbp40, seed=0, budget=Budget(max_minutes=0.0001),
                             settings=settings)
    assert training_steps == [4] and out.epochs == 1 and out.stopped_early


def test_missing_labels_are_masked(bbbp40):
    """Two tasks with NaN holes: finite scores, and validation selects a trained epoch."""
    big = np.array([smiles.count("C") + smiles.count("c") > 15 for smiles in bbbp40.smiles])
    labels = np.column_stack([bbbp40.labels[:, 0], big.astype(np.float64)])  # [40, 2]
    labels[::4, 0] = np.nan
    labels[1::3, 1] = np.nan
    assert (~np.isnan(labels)).all(axis=1).sum() < 40  # holes in both tasks
    rng = np.random.default_rng(0)
    order = rng.permutation(40)
    data = TaskData("two_tasks", bbbp40.smiles, labels, order[:28], order[28:34], order[34:])
    out = attentivefp_method(data, seed=0, budget=Budget(), settings=TINY)
    assert out.test_scores.shape == (6, 2)
    assert np.isfinite(out.test_scores).all()
    # unmasked NaN targets would turn every weight NaN and no epoch could be selected
    assert out.best_epoch >= 1


def test_single_class_training_task_still_trains(bbbp40):
    labels = bbbp40.labels.copy()
    labels[:20, 0] = 1.0  # train rows are all positive; valid rows keep both classes
    data = TaskData("one_class", bbbp40.smiles, labels, np.arange(20), np.arange(20, 40),
                    np.arange(20, 40))
    out = attentivefp_method(data, seed=0, budget=Budget(max_epochs=2), settings=TINY)
    assert out.epochs == 2 and np.isfinite(out.test_scores).all()


def test_regression_returns_validation_predictions(bbbp40):
    sizes = np.array([[len(s)] for s in bbbp40.smiles], dtype=np.float64)  # a real target
    data = bbbp40._replace(labels=sizes, task_type="regression")
    out = attentivefp_method(data, seed=0, budget=Budget(max_epochs=2), settings=TINY)
    # valid = test = all 40 rows: the best epoch's model predicts them identically
    assert out.valid_scores.shape == (40, 1)
    np.testing.assert_allclose(out.valid_scores, out.test_scores, rtol=1e-6)
    assert attentivefp_method(bbbp40, seed=0, budget=Budget(max_epochs=1),
                              settings=TINY).valid_scores is None
