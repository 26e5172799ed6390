"""Budget arithmetic, partner agreement, and the schedule of a decided budget."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import NamedTuple

import pytest
import torch

from exlm_chem.presets import fitted_warmup
from exlm_chem.train.budget import (
    await_partners,
    measure_pace,
    read_budget,
    settle,
    steps_within,
    write_budget,
)
from exlm_chem.train.pretrain_args import PretrainArgs, check_args, learning_rate


def test_steps_fit_the_remaining_time_minus_the_margin():
    assert steps_within(600.0, 0.25, margin=0.1) == 2160
    assert steps_within(1.0, 5.0, margin=0.0) == 1  # never zero steps
    with pytest.raises(ValueError):
        steps_within(10.0, 0.0, margin=0.1)


def test_the_schedule_of_a_decided_budget_decays_to_the_end():
    args = check_args(PretrainArgs(corpus=["c"], out="o", max_steps=6000,
                                   warmup_steps=fitted_warmup(10_000, 6000)))
    assert learning_rate(599, args) == pytest.approx(5e-4)
    assert learning_rate(5999, args) == pytest.approx(5e-4 / 5400)
    assert learning_rate(6000, args) == 0.0


def test_settle_takes_the_slowest_run_and_an_adopter_republishes_it():
    own = {"run": "a", "objective": "exlm", "own_max_steps": 2000, "seconds_per_step": 0.3}
    partner = {"run": "b", "objective": "mlm", "own_max_steps": 3100, "seconds_per_step": 0.2}
    record = settle(own, [partner], warmup_steps=10_000)
    assert (record["max_steps"], record["warmup_steps"]) == (2000, 200)
    assert record["partners"][0]["own_max_steps"] == 3100
    adopted = settle(None, [record], warmup_steps=100)
    assert adopted["max_steps"] == adopted["own_max_steps"] == 2000
    assert adopted["warmup_steps"] == 100 and adopted["adopted_from_partner"]


def test_two_runs_waiting_for_each_other_agree(tmp_path):
    dirs = [tmp_path / "exlm", tmp_path / "mlm"]
    measured = {0: 1800, 1: 2500}
    decided = {}

    def run(i: int) -> None:
        dirs[i].mkdir()
        own = {"run": str(dirs[i]), "own_max_steps": measured[i]}
        write_budget(dirs[i], own)
        partners = await_partners([str(dirs[1 - i])], timeout_s=20, poll_s=0.05)
        decided[i] = settle(own, partners, warmup_steps=100)["max_steps"]

    threads = [threading.Thread(target=run, args=(i,)) for i in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert decided == {0: 1800, 1: 1800}
    assert read_budget(dirs[1])["own_max_steps"] == 2500


def test_a_partner_that_never_writes_is_an_error(tmp_path):
    with pytest.raises(TimeoutError, match=r"budget\.json"):
        await_partners([str(tmp_path)], timeout_s=0.1, poll_s=0.05)


class _Batch(NamedTuple):
    x: torch.Tensor


class _SlowStartTrainer:
    """A trainer whose steps take 0.1 s on a fake clock, except ``slow`` steps (a worker
    starting, a new batch length compiling) that take 5 s; each step draws from the torch
    RNG and moves the weights and the Adam state, for the probe to undo."""

    def __init__(self, clock: list[float], slow: set[int]) -> None:
        self.args = SimpleNamespace(budget_warmup_steps=2, budget_probe_steps=10)
        self.device = torch.device("cpu")
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.1)
        self.clock, self.slow, self.steps = clock, slow, []

    def loader(self, progress: dict):
        while True:
            yield SimpleNamespace(batch=_Batch(torch.ones(3, 4)), n_tokens=50,
                                  targets=torch.zeros(3, 2))

    def train_item(self, item: SimpleNamespace, step: int) -> None:
        # the whole stream item: a probe that dropped the descriptor targets would time a
        # step without the auxiliary head
        assert item.targets is not None
        batch = item.batch
        noise = torch.randn(batch.x.shape)
        self.optimizer.zero_grad()
        self.model(batch.x + noise).pow(2).mean().backward()
        self.optimizer.step()
        self.steps.append(step)
        self.clock[0] += 5.0 if step in self.slow else 0.1


def test_the_pace_is_the_typical_step_and_the_probe_is_undone(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    # steps 5 and 6 are untimed, 7..16 timed: the first untimed one, the first timed one, a
    # later one and the last stall for 5 s each
    trainer = _SlowStartTrainer(clock, slow={5, 7, 11, 16})
    weights = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    torch.manual_seed(0)
    expected_draw = torch.rand(5)
    torch.manual_seed(0)
    pace = measure_pace(trainer, {"step": 5})
    assert trainer.steps == list(range(5, 17))
    assert (pace["probe_steps"], pace["untimed_steps"]) == (10, 2)
    assert pace["step_seconds"] == [5.0, 0.1, 0.1, 0.1, 5.0, 0.1, 0.1, 0.1, 0.1, 5.0]
    # the mean would be 1.57 s: three stalls would plan a run a sixth of its length
    assert pace["seconds_per_step"] == pytest.approx(0.1)
    assert pace["tokens_per_second"] == pytest.approx(500.0)
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(value, weights[name]), name
    assert trainer.optimizer.state_dict()["state"] == {}
    assert torch.equal(torch.rand(5), expected_draw)
