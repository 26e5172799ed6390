"""Feeding chunks to the cluster: backpressure, skipping finished parts, the tally.

The driver holds at most two chunks per worker thread in flight, so its memory is flat in
the library size and the workers never wait. Chunks travel inside the tasks: the workers
need to see the model and the output directory, not the input files. When a worker
process dies, the scheduler hands its chunk to another worker (up to
``distributed.scheduler.allowed-failures`` times); the other parts are untouched.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.screening.inputs import Chunk
from exlm_chem.screening.manifest import PartInfo, completed_part, part_name
from exlm_chem.screening.worker import ModelSpec, PartResult, PartTask, run_part


class WorkerStats(NamedTuple):
    rows: int
    seconds: float  # wall time summed over the worker's chunks (model load excluded)
    cpu_seconds: float  # the worker process's CPU time over the same spans
    peak_rss_mb: float

    @property
    def mol_per_s(self) -> float:
        """Rows per second of the worker's busy wall time."""
        return self.rows / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mol_per_cpu_s(self) -> float:
        """Rows per CPU second: the rate of a core of its own, whatever else runs there."""
        return self.rows / self.cpu_seconds if self.cpu_seconds > 0 else float("nan")


def default_workers() -> int:
    """One single-threaded worker per usable CPU core."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def quiet_dask() -> None:
    """Dask's own loggers (its config sets each one's level, so the parent ``distributed``
    logger alone does not reach them) at WARNING, unless the root logger shows DEBUG: a
    user screening a file wants the progress bar, not the cluster's chatter; the CLIs'
    ``-v`` keeps it."""
    import logging

    if logging.getLogger().isEnabledFor(logging.DEBUG):
        return
    import distributed  # noqa: F401  (its import configures the loggers set here)

    for name in list(logging.root.manager.loggerDict):
        if name == "distributed" or name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.WARNING)


class LazyClient:
    """The client to use, connected or started only when a chunk needs computing (a
    rerun of a finished screen starts nothing)."""

    def __init__(self, client: Any, scheduler: str | None, workers: int | None,
                 stack: contextlib.ExitStack) -> None:
        self._client = client
        self._scheduler, self._workers, self._stack = scheduler, workers, stack

    @property
    def in_process(self) -> bool:
        """``workers=0``: the chunks are computed here, one after another, without Dask
        (a small file: no cluster to start, the same parts and manifest)."""
        return self._client is None and not self._scheduler and self._workers == 0

    def get(self) -> Any:
        if self._client is None:
            from distributed import Client, LocalCluster

            if self._scheduler:
                self._client = self._stack.enter_context(Client(self._scheduler))
            else:
                local = self._stack.enter_context(LocalCluster(
                    n_workers=self._workers or default_workers(), threads_per_worker=1,
                    processes=True, dashboard_address=None))
                self._client = self._stack.enter_context(Client(local))
        return self._client


class Tally:
    """Counts of a run: rows and parts, skipped or computed, and per-worker stats."""

    def __init__(self) -> None:
        self.rows = self.invalid = self.computed = self.written = self.skipped = 0
        self.workers: dict[str, WorkerStats] = {}

    def skip(self, part: PartInfo) -> None:
        """Count a part completed by an earlier run."""
        self.rows += part.rows
        self.invalid += part.invalid
        self.skipped += 1

    def add(self, result: PartResult) -> None:
        """Count a part computed now."""
        self.rows += result.rows
        self.invalid += result.invalid
        self.computed += result.rows
        self.written += 1
        old = self.workers.get(result.worker, WorkerStats(0, 0.0, 0.0, 0.0))
        self.workers[result.worker] = WorkerStats(
            old.rows + result.rows, old.seconds + result.seconds,
            old.cpu_seconds + result.cpu_seconds, max(old.peak_rss_mb, result.peak_rss_mb))


def _todo(chunks: Iterator[Chunk], out: Path, paths: list[str], run: str,
          tally: Tally) -> Iterator[PartTask]:
    """The tasks of the chunks without a complete part; the complete ones are counted."""
    for chunk in chunks:
        name = part_name(chunk)
        done = completed_part(out / name, len(chunk.smiles), run)
        if done is not None:
            tally.skip(done)
            continue
        yield PartTask(str(out), name, paths[chunk.file_index], chunk.start, chunk.smiles, run,
                       chunk.features)


def drive(cluster: LazyClient, chunks: Iterator[Chunk], spec: ModelSpec, out: Path,
          paths: list[str], run: str, tally: Tally, bar: Any) -> None:
    if cluster.in_process:
        for task in _todo(chunks, out, paths, run, tally):
            result = run_part(spec, task)
            tally.add(result)
            if bar is not None:
                bar.update(result.rows)
        return
    from distributed import KilledWorker, as_completed

    token = uuid.uuid4().hex[:8]  # keys unique to this call, even on a long-lived client
    pending: Any = None  # as_completed, made with the first task (it needs the client)
    futures: set[Any] = set()

    def harvest(future: Any) -> None:
        futures.discard(future)
        try:
            result = future.result()
        except KilledWorker as error:
            raise RuntimeError(f"a chunk killed several workers in a row ({error}); out of "
                               "memory? Lower --chunk-rows or --batch-size. Finished parts "
                               "are kept: rerun the same command to resume.") from error
        tally.add(result)
        if bar is not None:
            bar.update(result.rows)

    try:
        for task in _todo(chunks, out, paths, run, tally):
            client = cluster.get()
            if pending is None:
                pending = as_completed(loop=client.loop)
            window = 2 * max(1, sum(client.nthreads().values()))
            while pending.count() >= window:
                harvest(next(pending))
            future = client.submit(run_part, spec, task, key=f"screen-{token}-{task.name}",
                                   pure=False)
            futures.add(future)
            pending.add(future)
        for future in pending if pending is not None else ():
            harvest(future)
    except BaseException:
        if futures:
            cluster.get().cancel(list(futures))
        raise
