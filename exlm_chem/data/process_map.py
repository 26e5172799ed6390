"""The one parallel map over processes: RDKit work on many molecules spread over cores.

Scaffolds (:mod:`exlm_chem.data.splits`), descriptors (:mod:`exlm_chem.data.descriptors`)
and canonical SMILES (:mod:`exlm_chem.data.hygiene`) all call :func:`map_chunks`, so
``n_jobs`` means one thing everywhere:

* ``None`` or ``-1`` (any negative): every core this process may use (its CPU affinity);
  a positive integer: at most that many workers; anything else raises ``ValueError``.
* Never more workers than usable cores, and never fewer than the caller's
  ``min_per_worker`` items per worker: an input too small for two workers runs in this
  process, with no pool at all.
* The input is cut into contiguous chunks and the chunk results are joined in input
  order (list concatenation unless the caller gives ``join``), so the result never
  depends on ``n_jobs``.
* Workers are fresh interpreters from joblib's loky backend, not forks: the caller may
  hold torch's OpenMP threads (an estimator's ``fit``), and forking a threaded process can
  deadlock. Unlike :mod:`multiprocessing`'s spawn, loky does not re-run the caller's
  ``__main__`` script in its workers, so a plain script (no ``if __name__ ==
  "__main__":`` guard) can fit with ``n_jobs > 1``. A worker imports only the mapped
  function's module: keep such modules free of torch at import. The workers stay up for
  a while and serve the next map, so repeated fits pay the start-up once.
* Because the workers outlive a map, the operating system's account of this process's
  children does not hold their CPU time; each chunk reports its own, and
  :func:`worker_cpu_seconds` sums them (what a benchmark cell records as its CPU time).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from exlm_chem.threads import available_cores

__all__ = [
    "CHUNKS_PER_WORKER",
    "concatenate_lists",
    "contiguous_chunks",
    "map_chunks",
    "resolve_n_jobs",
    "worker_count",
    "worker_cpu_seconds",
]

T = TypeVar("T")
R = TypeVar("R")

# Several chunks per worker even out chunks of unequal cost (ring systems, big molecules).
CHUNKS_PER_WORKER = 4

_worker_cpu = [0.0]  # CPU seconds the workers spent on this process's chunks
_worker_cpu_lock = threading.Lock()


def worker_cpu_seconds() -> float:
    """CPU seconds (user + system) that worker processes have spent on this process's
    chunks so far; their start-up and imports are not counted. Read it before and after
    a piece of work: the difference is that work's share in the workers."""
    with _worker_cpu_lock:
        return _worker_cpu[0]


def _timed(func: Callable[[list[T]], R], chunk: list[T]) -> tuple[R, float]:
    """``func(chunk)`` in a worker, with the worker's CPU seconds for it."""
    started = time.process_time()
    result = func(chunk)
    return result, time.process_time() - started


def resolve_n_jobs(n_jobs: int | None) -> int:
    """The number of worker processes ``n_jobs`` asks for.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` or negative (``-1``): every core this process may use; a positive
        integer: that many.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0, a bool or not an integer.
    """
    if n_jobs is None:
        return available_cores()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs == 0:
        raise ValueError(
            f"n_jobs must be None, a positive integer or -1 (all cores), got {n_jobs!r}"
        )
    return available_cores() if n_jobs < 0 else int(n_jobs)


def worker_count(n_jobs: int | None, n_items: int, min_per_worker: int) -> int:
    """How many workers to start for ``n_items`` items; 1 means run in this process.

    Parameters
    ----------
    n_jobs : int or None
        As in :func:`resolve_n_jobs` (validated here).
    n_items : int
        Length of the input.
    min_per_worker : int
        Fewest items that pay for a worker (its start-up and imports, RDKit's included).

    Returns
    -------
    int
        ``min(n_jobs, usable cores, n_items // min_per_worker)``, at least 1.
    """
    requested = resolve_n_jobs(n_jobs)
    if min_per_worker < 1:
        raise ValueError(f"min_per_worker must be at least 1, got {min_per_worker!r}")
    # more workers than cores only contend for the same cores
    return max(1, min(requested, available_cores(), n_items // min_per_worker))


def contiguous_chunks(
    items: Sequence[T], n_chunks: int | None = None, chunk_size: int | None = None
) -> list[list[T]]:
    """``items`` cut into consecutive lists, which concatenated give ``items`` back.

    Parameters
    ----------
    items : sequence
        The input (list, tuple, array...).
    n_chunks : int, optional
        Cut into this many chunks of near-equal length (at most ``len(items)``).
    chunk_size : int, optional
        Cut into chunks of this length (the last one shorter). Give exactly one of
        ``n_chunks`` and ``chunk_size``.

    Returns
    -------
    list of list
        No empty chunk; ``[]`` for an empty input.
    """
    if (n_chunks is None) == (chunk_size is None):
        raise ValueError("give exactly one of n_chunks and chunk_size")
    values = list(items)
    n = len(values)
    if chunk_size is not None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size!r}")
        return [values[i : i + chunk_size] for i in range(0, n, chunk_size)]
    if n_chunks is None or n_chunks < 1:
        raise ValueError(f"n_chunks must be at least 1, got {n_chunks!r}")
    k = min(n_chunks, n)
    return [values[n * i // k : n * (i + 1) // k] for i in range(k)]


def concatenate_lists(parts: list[list[T]]) -> list[T]:
    """The chunk results of a function that returns one list item per input item, joined."""
    return [x for part in parts for x in part]


def map_chunks(
    func: Callable[[list[T]], R],
    items: Sequence[T],
    *,
    n_jobs: int | None,
    min_per_worker: int,
    chunk_size: int | None = None,
    task: str = "mapping over processes",
    join: Callable[[list[R]], R] = concatenate_lists,  # type: ignore[assignment]
) -> R:
    """``func`` applied to contiguous chunks of ``items`` over worker processes, joined.

    Parameters
    ----------
    func : callable
        Takes a list of items and returns their result (a list, an array...). It must
        be picklable: a module-level function, or a :func:`functools.partial` of one,
        in a module a fresh interpreter can import cheaply.
    items : sequence
        The input.
    n_jobs : int or None
        Worker processes, as in :func:`resolve_n_jobs`.
    min_per_worker : int
        Fewest items worth a worker (:func:`worker_count`); below twice this the whole
        input runs in this process.
    chunk_size : int, optional
        Items per task sent to a worker (bounds what one result carries back); default:
        :data:`CHUNKS_PER_WORKER` near-equal chunks per worker.
    task : str
        What the map does, for the error message (``"computing scaffolds"``).
    join : callable
        Makes the whole result from the chunk results, given in input order: list
        concatenation by default, :func:`numpy.concatenate` for arrays.

    Returns
    -------
    object
        What ``func(items)`` returns: computed in this process when the input is too small
        for two workers (``items`` passed as given, ``join`` not called), else joined from
        the workers' chunk results.

    Raises
    ------
    ValueError
        For a bad ``n_jobs`` (even when the input is small).
    RuntimeError
        If a worker process died. An exception ``func`` raises reaches the caller
        unchanged.
    """
    workers = worker_count(n_jobs, len(items), min_per_worker)
    if workers == 1:
        return func(items)  # type: ignore[arg-type]
    if chunk_size is None:
        chunks = contiguous_chunks(items, n_chunks=workers * CHUNKS_PER_WORKER)
    else:
        chunks = contiguous_chunks(items, chunk_size=chunk_size)
    # joblib is scikit-learn's own dependency; import it only when a pool is needed
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    try:
        # results come back in submission order, whatever order the workers finish in
        timed = Parallel(n_jobs=workers, backend="loky")(delayed(_timed)(func, c)
                                                         for c in chunks)
    except TerminatedWorkerError as err:
        raise RuntimeError(
            f"a worker process died while {task} with n_jobs={n_jobs} (killed, or out of "
            "memory); n_jobs=1 computes in this process"
        ) from err
    with _worker_cpu_lock:
        _worker_cpu[0] += sum(seconds for _, seconds in timed)
    return join([part for part, _ in timed])
