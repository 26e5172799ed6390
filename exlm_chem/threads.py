"""How many CPU threads this process computes with, set once per command from ``--threads``.

torch's own default is the number of physical cores it detects, which on shared machines
and containers can differ from the cores this process is allowed to run on. The commands
that compute (embed, fit, predict, benchmark, pretrain) take ``--threads``; without it,
``$EXLM_CHEM_THREADS``, then ``$OMP_NUM_THREADS``, then every core the process may use.

The count holds for torch and for the thread pools of the libraries beside it
(scikit-learn's gradient boosting, NumPy's BLAS): a command run with ``--threads 1`` next
to another on two cores must not spin two OpenMP threads in its tree fits. Worker
processes for RDKit work follow their own ``n_jobs`` (:mod:`exlm_chem.data.process_map`).
"""

from __future__ import annotations

import argparse
import os

THREADS_ENV = "EXLM_CHEM_THREADS"


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def resolve_threads(threads: int | None = None) -> int:
    """``threads``, else ``$EXLM_CHEM_THREADS``, else ``$OMP_NUM_THREADS``, else all cores."""
    source = "--threads"
    if threads is None:
        for name in (THREADS_ENV, "OMP_NUM_THREADS"):
            if os.environ.get(name, "").strip():
                threads, source = os.environ[name].strip(), f"${name}"
                break
        else:
            return available_cores()
    try:
        value = int(threads)
    except ValueError:
        raise ValueError(f"{source} must be a positive integer, got {threads!r}") from None
    if value < 1:
        raise ValueError(f"{source} must be a positive integer, got {threads!r}")
    return value


def set_threads(threads: int | None = None) -> int:
    """Apply :func:`resolve_threads` to torch's intra-op threads and to the OpenMP and BLAS
    pools of the other libraries; returns the count.

    The pools loaded already are limited through threadpoolctl; ``$OMP_NUM_THREADS`` is set
    for the OpenMP runtimes loaded later (scikit-learn's, on its first parallel fit), which
    read it when they start.
    """
    import torch
    from threadpoolctl import threadpool_limits

    value = resolve_threads(threads)
    torch.set_num_threads(value)
    os.environ["OMP_NUM_THREADS"] = str(value)
    threadpool_limits(limits=value)
    return value


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` on a subcommand's parser."""
    parser.add_argument("--threads", type=int, default=None,
                        help=f"CPU threads for torch and the tree fits (default: "
                             f"${THREADS_ENV}, then $OMP_NUM_THREADS, then every core this "
                             "process may use)")
