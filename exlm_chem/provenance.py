"""Where a measured figure came from: commit, machine and load.

Used by the benchmark runner (every results row) and the scripts in ``benchmarks/``.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """``$EXLM_GIT_COMMIT`` when set (a copy of a checkout, e.g. on a GPU machine, whose
    own .git, if any, is not the commit it was copied from); else the short HEAD of the
    source checkout, ``+dirty`` when tracked files differ from it; else
    ``exlm_chem <version>``."""
    if os.environ.get("EXLM_GIT_COMMIT"):
        return os.environ["EXLM_GIT_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        from exlm_chem import __version__

        return f"exlm_chem {__version__}"
    return head + ("+dirty" if dirty.strip() else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine() -> str:
    """CPU model and usable cores, plus the GPU when torch sees one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    text = f"{cpu_model()}, {cores} cores"
    try:
        import torch

        if torch.cuda.is_available():
            text += f", {torch.cuda.get_device_name(0)}"
        else:
            text += f", CPU only, torch threads {torch.get_num_threads()}"
    except ImportError:
        pass
    return text
