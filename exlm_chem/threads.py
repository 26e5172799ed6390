"""How many CPU threads torch may use, set once per command from ``--threads``.

torch's own default is the number of physical cores it detects, which on shared machines
and containers can differ from the cores this process is allowed to run on. The commands
that compute (embed, fit, predict, benchmark, pretrain) take ``--threads``; without it,
``$EXLM_CHEM_THREADS``, then ``$OMP_NUM_THREADS``, then every core the process may use.
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
    """Apply :func:`resolve_threads` to torch (intra-op threads); returns the count."""
    import torch

    value = resolve_threads(threads)
    torch.set_num_threads(value)
    return value


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` on a subcommand's parser."""
    parser.add_argument("--threads", type=int, default=None,
                        help=f"CPU threads for torch (default: ${THREADS_ENV}, then "
                             "$OMP_NUM_THREADS, then every core this process may use)")
