"""Budget arithmetic, partner agreement, and the schedule of a decided budget."""

from __future__ import annotations

import threading

import pytest

from exlm_chem.presets import fitted_warmup
from exlm_chem.train.budget import (
    await_partners,
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
