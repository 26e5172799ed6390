"""The shared epoch loop on a fake problem whose every number is known in advance.

The "network" is one weight that each step raises by 1, so the weight tells exactly which
epoch's state is in place; validation scores are scripted per epoch; the clock is fake.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from exlm_chem.data.batching import bucketed_batches
from exlm_chem.train.epoch_loop import (
    EpochRecord,
    LoopSettings,
    Step,
    run_epochs,
    shuffled_batches,
)

STEPS = [1.0, 2.0, 3.0]  # one epoch's batches: each is the loss its step reports


def _higher(score: float, best: float) -> bool:
    return not math.isnan(score) and (math.isnan(best) or score > best)


class Fake:
    """A one-weight net, its step and its scripted validation."""

    def __init__(self, scores: list[float]) -> None:
        self.net = torch.nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            self.net.weight.zero_()
        self.scores = scores
        self.modes: list[bool] = []  # net.training at every step
        self.epochs_validated = 0

    def weight(self) -> float:
        return float(self.net.weight.detach())

    def batches(self, epoch: int) -> list[float]:
        return list(STEPS)

    def step(self, batch: float) -> Step:
        self.modes.append(self.net.training)
        with torch.no_grad():
            self.net.weight += 1.0
        return Step(torch.tensor(batch), lr=0.1 * batch)

    def validate(self) -> tuple[float, float]:
        self.epochs_validated += 1
        return 10.0 * self.epochs_validated, self.scores[self.epochs_validated - 1]

    def run(self, settings: LoopSettings, **kwargs):
        kwargs.setdefault("clock", itertools.count().__next__)  # +1 s per reading
        return run_epochs(self.net, settings, self.batches, self.step, self.validate, _higher,
                          **kwargs)


def test_history_and_best_epoch_restored():
    fake = Fake([0.5, 0.7, 0.6, 0.65])
    result = fake.run(LoopSettings(epochs=4))
    # no budget: the clock is read at the start and around each epoch, 1 s apart
    assert result.history == [
        EpochRecord(1, 2.0, 10.0, 0.5, pytest.approx(0.3), 1.0),
        EpochRecord(2, 2.0, 20.0, 0.7, pytest.approx(0.3), 1.0),
        EpochRecord(3, 2.0, 30.0, 0.6, pytest.approx(0.3), 1.0),
        EpochRecord(4, 2.0, 40.0, 0.65, pytest.approx(0.3), 1.0),
    ]
    assert (result.best_epoch, result.best_score) == (2, 0.7)
    assert (result.n_steps, result.stopped_early) == (12, False)
    assert fake.weight() == 6.0  # the state after epoch 2's three steps
    assert all(fake.modes) and not fake.net.training  # train mode in epochs, eval after


@pytest.mark.parametrize("patience, epochs_run", [(1, 3), (2, 4), (3, 5), (None, 6)])
def test_patience_stops_at_the_right_epoch(patience, epochs_run):
    # best at epoch 2; epoch 5 does not beat it, epoch 6 would
    fake = Fake([0.5, 0.7, 0.6, 0.65, 0.69, 0.9])
    result = fake.run(LoopSettings(epochs=6, patience=patience))
    assert len(result.history) == epochs_run and not result.stopped_early
    expected_best = 6 if patience is None else 2
    assert result.best_epoch == expected_best
    assert fake.weight() == 3.0 * expected_best


def test_max_minutes_stops_after_the_step_that_spends_it():
    fake = Fake([0.5, 0.7])
    clock = itertools.count(0, 10).__next__  # +10 s per reading
    # readings: start 0, epoch start 10, after the steps 20, 30, 40: 40 - 0 > 30 s
    result = fake.run(LoopSettings(epochs=2, max_minutes=0.5), clock=clock)
    assert result.stopped_early and result.n_steps == 3 and len(result.history) == 1
    assert result.history[0] == EpochRecord(1, 2.0, 10.0, 0.5, pytest.approx(0.3), 40.0)
    assert result.best_epoch == 1  # the partial epoch was validated
    fake = Fake([0.5, 0.7])
    clock = itertools.count(0, 31).__next__  # start 0, epoch start 31, first step 62 > 30
    result = fake.run(LoopSettings(epochs=2, max_minutes=0.5), clock=clock)
    assert result.stopped_early and result.n_steps == 1 and fake.weight() == 1.0


def test_no_winner_keeps_initial_weights_or_the_last_epoch():
    nan = float("nan")
    fake = Fake([nan, nan, nan])
    result = fake.run(LoopSettings(epochs=3))
    assert (result.best_epoch, fake.weight()) == (0, 0.0)  # the initial state, put back
    fake = Fake([nan, nan, nan])
    result = fake.run(LoopSettings(epochs=3), keep_last=True)
    assert (result.best_epoch, fake.weight()) == (3, 9.0)
    assert math.isnan(result.best_score)
    fake = Fake([nan, 0.4, nan])
    result = fake.run(LoopSettings(epochs=3), keep_last=True)
    assert (result.best_epoch, result.best_score, fake.weight()) == (2, 0.4, 6.0)


def test_without_validation_the_last_epoch_is_kept_and_patience_ignored():
    fake = Fake([])
    result = run_epochs(fake.net, LoopSettings(epochs=3, patience=1), fake.batches, fake.step)
    assert (result.best_epoch, len(result.history), fake.weight()) == (3, 3, 9.0)
    assert math.isnan(result.best_score)
    assert all(math.isnan(r.valid_loss) and math.isnan(r.valid_score) for r in result.history)


def test_steps_without_a_loss_count_as_steps_but_not_in_the_mean():
    fake = Fake([0.5])

    def step(batch: float) -> Step:
        out = fake.step(batch)
        return out if batch != 2.0 else Step(None, out.lr)

    result = run_epochs(fake.net, LoopSettings(epochs=1), fake.batches, step)
    assert result.n_steps == 3 and result.history[0].train_loss == 2.0  # (1 + 3) / 2
    result = run_epochs(fake.net, LoopSettings(epochs=1), fake.batches,
                        lambda batch: Step(None, 0.0))
    assert math.isnan(result.history[0].train_loss)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="patience must be None or >= 1, got 0"):
        LoopSettings(epochs=1, patience=0)
    fake = Fake([0.5])
    with pytest.raises(ValueError, match="needs `better`"):
        run_epochs(fake.net, LoopSettings(epochs=1), fake.batches, fake.step, fake.validate)


def test_shuffled_batches_draw_the_usual_orders():
    batches = shuffled_batches(np.random.default_rng(0), 2, 5)
    perm = np.random.default_rng(0).permutation(5)
    assert [b.tolist() for b in batches] == [perm[:2].tolist(), perm[2:4].tolist(),
                                             perm[4:].tolist()]
    lengths = np.array([5, 9, 3, 7, 4, 8, 6])
    bucketed = shuffled_batches(np.random.default_rng(1), 3, 7, lengths)
    expected = bucketed_batches(lengths, 3, np.random.default_rng(1))
    assert [b.tolist() for b in bucketed] == [b.tolist() for b in expected]
