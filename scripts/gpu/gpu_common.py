"""What the GPU scripts share: the work folder's layout, logged commands, run logs.

Everything a GPU session writes outside ``$OUT`` lives in one work folder (default
``/tmp/exlm_gpu``, or ``$EXLM_GPU_WORK``) so that later calls (poll, gather) find it:

    plan.json       what ``start`` decided (steps, budget, run commands, deadline)
    env.json        device, torch, triton, python, commit
    status.json     the supervisor's view of the runs (pids, exit codes, end times)
    progress.jsonl  (time, step) of each run every few seconds: rates and ETAs
    logs/           one log per step of ``start`` and per run (stdout + stderr)
    bench/          the benchmark tables (markdown) and the step benchmark's JSON
    runs/<arm>      the pre-training run folders (checkpoint/, log.jsonl), one per arm
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[2]
OBJECTIVES = ("exlm", "mlm")
# the runs a session trains side by side when `start` is given no --arm: ExLM and its twin
DEFAULT_ARMS = ("exlm exlm", "mlm mlm")
DEFAULT_WORK = Path(os.environ.get("EXLM_GPU_WORK", "/tmp/exlm_gpu"))


class Work(NamedTuple):
    """Paths inside one work folder."""

    root: Path

    @property
    def plan(self) -> Path:
        return self.root / "plan.json"

    @property
    def env(self) -> Path:
        return self.root / "env.json"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    @property
    def progress(self) -> Path:
        return self.root / "progress.jsonl"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def bench(self) -> Path:
        return self.root / "bench"

    def run(self, objective: str) -> Path:
        return self.root / "runs" / objective


class Arm(NamedTuple):
    """One pre-training run of a session: all arms train side by side, the same steps."""

    name: str  # run folder runs/<name>, checkpoint <name>-<preset> in the gathered folder
    objective: str  # exlm | mlm
    flags: tuple[str, ...] = ()  # extra `exlm-chem pretrain` flags of this arm alone


def parse_arm(text: str) -> Arm:
    """``"NAME OBJECTIVE [FLAG ...]"`` (whitespace-separated), e.g.
    ``"exlm-d10 exlm --aux-weight 10"``."""
    parts = text.split()
    if len(parts) < 2:
        raise ValueError(f"an arm is 'NAME OBJECTIVE [FLAG ...]', got {text!r}")
    name, objective, *flags = parts
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(f"arm name {name!r}: letters, digits, '.', '_' and '-' only "
                         "(it names files the device tool brings back)")
    if objective not in OBJECTIVES:
        raise ValueError(f"arm {name!r}: objective must be one of {OBJECTIVES}, got "
                         f"{objective!r}")
    return Arm(name, objective, tuple(flags))


def arm_names(work: Work) -> list[str]:
    """The arms of the session in ``work``, in the plan's order ([] before ``start``)."""
    return list(read_json(work.plan, {}).get("runs", {}))


class Clock:
    """Seconds left of this device call (one command runs 10 minutes at most there)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def read_json(path: Path, default: Any = None) -> Any:
    """JSON of ``path``, or ``default`` when it is missing or half-written."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def write_json(path: Path, obj: Any) -> None:
    """Write atomically: a poll reading it meanwhile sees the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def run_logged(name: str, cmd: list[str], log: Path, timeout: float) -> int:
    """Run ``cmd`` in the repository with its output in ``log``; echo the last lines.

    Returns the exit code (124 on timeout; 125, not run, when ``timeout`` is under 20 s).
    Never raises for a failing command: the caller decides whether a failure stops.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    if timeout < 20:
        print(f"\n== {name}: skipped, this call has no time left for it", flush=True)
        return 125
    print(f"\n== {name}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    with log.open("w") as handle:
        try:
            code = subprocess.run(
                cmd, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout, check=False
            ).returncode
        except subprocess.TimeoutExpired:
            code = 124
    lines = log.read_text(errors="replace").splitlines()
    tail = [line for line in lines if line.strip()][-12 if code else -4 :]
    for line in tail:
        print(f"   {line[:160]}")
    print(f"== {name}: exit {code} in {time.monotonic() - start:.0f} s (log {log})", flush=True)
    return code


def verdict(code: int) -> str:
    """What a :func:`run_logged` exit code says about the check it ran: only "failed" is a
    verdict against the code; "timed out" and "not run" say the call ran short of time."""
    return {0: "passed", 124: "timed out", 125: "not run (no time left)"}.get(code, "failed")


def git_commit() -> str:
    """``$EXLM_GIT_COMMIT`` when set, else HEAD of the checkout (``provenance.git_commit``)."""
    from exlm_chem.provenance import git_commit as commit

    found = commit()
    return (
        found
        if not found.startswith("exlm_chem ")
        else f"unknown ({found}; no .git, no $EXLM_GIT_COMMIT)"
    )


def environment() -> dict[str, str]:
    """Device name, library versions and commit, for every table and the report."""
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "absent"
    cuda = torch.cuda.is_available()
    return {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu (no CUDA device)",
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "triton": triton_version,
        "python": platform.python_version(),
        "cpu_cores": str(os.cpu_count()),
        "commit": git_commit(),
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def read_run_log(run: Path) -> tuple[list[dict], list[dict]]:
    """(training records, validation records) of a run's ``log.jsonl``; a torn last line
    (the run is writing it) is skipped."""
    train, valid = [], []
    try:
        lines = (run / "log.jsonl").read_text().splitlines()
    except OSError:
        return train, valid
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "valid_loss" in record:
            valid.append(record)
        elif "loss" in record:
            train.append(record)
    return train, valid


def python() -> str:
    """The interpreter running this script (the GPU image's python3 holds torch)."""
    return sys.executable
