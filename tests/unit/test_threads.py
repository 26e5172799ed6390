"""Tests of exlm_chem.threads: where the torch thread count comes from."""

from __future__ import annotations

import os

import pytest
import torch

from exlm_chem.cli import build_parser
from exlm_chem.threads import THREADS_ENV, available_cores, resolve_threads, set_threads


def test_resolution_order(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert resolve_threads() == available_cores() >= 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert resolve_threads() == 3
    monkeypatch.setenv(THREADS_ENV, "5")
    assert resolve_threads() == 5
    assert resolve_threads(2) == 2  # the option wins over both variables


@pytest.mark.parametrize(("value", "where"), [(0, "--threads"), ("x", "--threads")])
def test_bad_option(value, where):
    with pytest.raises(ValueError, match=f"{where} must be a positive integer"):
        resolve_threads(value)


def test_bad_environment(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ValueError, match=r"\$EXLM_CHEM_THREADS must be a positive integer"):
        resolve_threads()


def test_set_threads_applies_to_torch_and_the_other_thread_pools(monkeypatch):
    from sklearn.ensemble import HistGradientBoostingClassifier  # loads sklearn's OpenMP
    from threadpoolctl import threadpool_info, threadpool_limits

    del HistGradientBoostingClassifier
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # restored after the test
    before = torch.get_num_threads()
    original = threadpool_limits(limits=None)  # the pools' counts now, to restore
    try:
        assert set_threads(2) == 2 and torch.get_num_threads() == 2
        assert os.environ["OMP_NUM_THREADS"] == "2"  # for runtimes loaded later
        pools = threadpool_info()
        assert any(p["user_api"] == "openmp" for p in pools), pools
        assert all(p["num_threads"] == 2 for p in pools), pools
    finally:
        original.restore_original_limits()
        torch.set_num_threads(before)


@pytest.mark.parametrize("argv", [
    ["embed", "in.csv", "--out", "o.npy"],
    ["fit", "in.csv", "--target-columns", "y", "--out", "m"],
    ["predict", "m", "in.csv", "--out", "o.csv"],
    ["benchmark", "--out", "r"],
])
def test_compute_commands_take_threads(argv):
    parser = build_parser()
    assert parser.parse_args([*argv, "--threads", "1"]).threads == 1
    assert parser.parse_args(argv).threads is None
