"""Tests of exlm_chem.data.process_map: the one parallel map over worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import joblib
import numpy as np
import pytest

from exlm_chem.data import process_map
from exlm_chem.data.process_map import (
    contiguous_chunks,
    map_chunks,
    resolve_n_jobs,
    worker_count,
)

# A fresh worker interpreter imports this module, so it sees this value even after a test
# changes it in the parent; a forked one would inherit the change.
_ORIGIN = "imported"


def _squares(chunk: list[int]) -> list[int]:
    return [x * x for x in chunk]


def _squares_and_origin(chunk: list[int]) -> list[tuple[int, int, str]]:
    return [(x * x, os.getpid(), _ORIGIN) for x in chunk]


def _aranges(chunk: list[int]) -> np.ndarray:
    return np.concatenate([np.arange(float(n)) for n in chunk])


def _spin(chunk: list[int]) -> list[int]:
    """At least 0.05 CPU-s of work per chunk."""
    started = time.process_time()
    while time.process_time() - started < 0.05:
        pass
    return chunk


def _die(chunk: list[int]) -> list[int]:
    os._exit(3)  # a worker killed mid-task (by the OOM killer, say)


class _RecordingParallel(joblib.Parallel):
    """joblib's real Parallel, recording how the map asked for it."""

    started: list[tuple[int | None, str | None]] = []  # noqa: RUF012 (reset per test)

    def __init__(self, n_jobs=None, backend=None, **kwargs):
        _RecordingParallel.started.append((n_jobs, backend))
        super().__init__(n_jobs=n_jobs, backend=backend, **kwargs)


@pytest.fixture
def two_cores(monkeypatch):
    """Two usable cores whatever the machine, so the worker count is known."""
    monkeypatch.setattr(process_map, "available_cores", lambda: 2)


@pytest.fixture
def recording_pool(monkeypatch):
    _RecordingParallel.started = []
    monkeypatch.setattr(joblib, "Parallel", _RecordingParallel)
    return _RecordingParallel


@pytest.fixture
def no_pool(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a process pool was started for a small input")

    monkeypatch.setattr(joblib, "Parallel", refuse)


# --------------------------------------------------------------------------- n_jobs


@pytest.mark.parametrize("n_jobs", [None, -1, -4])
def test_none_and_negative_n_jobs_mean_every_usable_core(n_jobs, two_cores):
    assert resolve_n_jobs(n_jobs) == 2


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_every_usable_core_is_the_affinity_of_this_process():
    assert resolve_n_jobs(-1) == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("n_jobs", [1, 3, np.int64(5)])
def test_positive_n_jobs_is_taken_as_given(n_jobs):
    assert resolve_n_jobs(n_jobs) == int(n_jobs)
    assert type(resolve_n_jobs(n_jobs)) is int


@pytest.mark.parametrize("n_jobs", [0, True, False, 2.0, "2"])
def test_bad_n_jobs_is_a_clear_value_error(n_jobs):
    with pytest.raises(ValueError, match=r"n_jobs must be None, a positive integer or -1"):
        resolve_n_jobs(n_jobs)


def test_bad_n_jobs_fails_even_for_an_input_that_runs_in_process(no_pool):
    with pytest.raises(ValueError, match="n_jobs"):
        map_chunks(_squares, [1, 2, 3], n_jobs=0, min_per_worker=10)


def test_worker_count_is_capped_by_n_jobs_cores_and_items_per_worker(two_cores):
    assert worker_count(8, 10_000, 100) == 2  # cores
    assert worker_count(1, 10_000, 100) == 1  # n_jobs
    assert worker_count(None, 250, 100) == 2  # items: 2 workers of >= 100
    assert worker_count(None, 199, 100) == 1  # too few for two workers
    assert worker_count(None, 0, 100) == 1
    with pytest.raises(ValueError, match="min_per_worker"):
        worker_count(2, 10, 0)


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100])
@pytest.mark.parametrize("n_chunks", [1, 3, 8])
def test_chunks_are_contiguous_near_equal_and_keep_order(n, n_chunks):
    items = list(range(n))
    chunks = contiguous_chunks(items, n_chunks=n_chunks)
    assert [x for chunk in chunks for x in chunk] == items
    assert len(chunks) == min(n_chunks, n)
    assert all(chunks) and (not chunks or max(map(len, chunks)) - min(map(len, chunks)) <= 1)


def test_chunks_of_a_fixed_size_from_any_sequence():
    chunks = contiguous_chunks(np.arange(7), chunk_size=3)
    assert [list(map(int, c)) for c in chunks] == [[0, 1, 2], [3, 4, 5], [6]]
    assert all(isinstance(c, list) for c in chunks)
    with pytest.raises(ValueError, match="exactly one"):
        contiguous_chunks([1], n_chunks=1, chunk_size=1)
    with pytest.raises(ValueError, match="chunk_size"):
        contiguous_chunks([1], chunk_size=0)


# --------------------------------------------------------------------------- the map


def test_a_small_input_runs_in_this_process_with_the_input_as_given(two_cores, no_pool):
    items = (3, 1, 2)
    seen = []

    def record(chunk):  # a local function: it could not be sent to a worker
        seen.append(chunk)
        return _squares(list(chunk))

    def never(parts):
        raise AssertionError("one chunk needs no join")

    assert map_chunks(record, items, n_jobs=-1, min_per_worker=2, join=never) == [9, 1, 4]
    assert seen[0] is items
    assert map_chunks(record, list(range(100)), n_jobs=1, min_per_worker=1) == _squares(
        list(range(100))
    )


def test_a_large_input_runs_in_fresh_workers_and_keeps_order(two_cores, recording_pool,
                                                               monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "_ORIGIN", "changed in the parent")
    items = list(range(1000, 0, -1))  # descending, so a reordering would show
    parts = map_chunks(_squares_and_origin, items, n_jobs=-1, min_per_worker=100,
                       chunk_size=37, join=list)  # join=list: the chunk results as they come
    assert recording_pool.started == [(2, "loky")]
    assert [len(part) for part in parts] == [37] * 27 + [1]
    flat = [row for part in parts for row in part]
    assert [square for square, _, _ in flat] == _squares(items)  # the in-process result
    pids = {pid for _, pid, _ in flat}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert {origin for _, _, origin in flat} == {"imported"}  # fresh interpreters, no fork


def test_default_chunks_are_a_few_per_worker_in_order(two_cores, recording_pool):
    items = list(range(400))
    parts = map_chunks(_squares, items, n_jobs=2, min_per_worker=100, join=list)
    assert recording_pool.started == [(2, "loky")]
    assert len(parts) == 2 * process_map.CHUNKS_PER_WORKER
    assert [x for part in parts for x in part] == map_chunks(
        _squares, items, n_jobs=1, min_per_worker=100
    )


def test_the_join_makes_the_whole_result(two_cores, recording_pool):
    items = [3, 5] * 150
    whole = map_chunks(_aranges, items, n_jobs=2, min_per_worker=100, join=np.concatenate)
    assert recording_pool.started == [(2, "loky")]
    np.testing.assert_array_equal(whole, _aranges(items))


def test_the_workers_cpu_time_is_summed_and_in_process_work_is_not(two_cores):
    before = process_map.worker_cpu_seconds()
    assert map_chunks(_spin, list(range(8)), n_jobs=2, min_per_worker=1,
                      chunk_size=1) == list(range(8))
    after_workers = process_map.worker_cpu_seconds()
    assert after_workers - before >= 8 * 0.05  # every chunk's CPU, from both workers
    map_chunks(_spin, list(range(8)), n_jobs=1, min_per_worker=1, chunk_size=1)
    assert process_map.worker_cpu_seconds() == after_workers  # this process's own time


def test_a_dead_worker_is_a_runtime_error(two_cores):
    with pytest.raises(RuntimeError, match=r"worker process died while testing with n_jobs=2"):
        map_chunks(_die, list(range(10)), n_jobs=2, min_per_worker=1, task="testing")


def test_a_script_without_the_main_guard_maps_once(tmp_path: Path):
    """Workers do not re-run the calling script (multiprocessing's spawn would: every
    worker would run its top level again, and the map inside it would fail)."""
    script = tmp_path / "plain_script.py"
    script.write_text(
        "from exlm_chem.data.hygiene import canonical_smiles\n"
        "from exlm_chem.data.process_map import map_chunks\n"
        "print('top level ran', flush=True)\n"
        "def canon(chunk):  # defined in the script: sent to the workers by value\n"
        "    return [canonical_smiles(s) for s in chunk]\n"
        "out = map_chunks(canon, ['OCC', 'c1ccccc1O', 'not a smiles'] * 20, n_jobs=2,\n"
        "                 min_per_worker=10, chunk_size=3)\n"
        "print(len(out), out[:3])\n",
        encoding="utf-8",
    )
    repo = Path(__file__).resolve().parents[3]
    path = os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("top level ran") == 1
    assert "60 ['CCO', 'Oc1ccccc1', None]" in run.stdout


def test_importing_the_module_imports_neither_torch_nor_rdkit():
    code = ("import sys, exlm_chem.data.process_map; "
            "print(sorted(m for m in ('torch', 'rdkit') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
