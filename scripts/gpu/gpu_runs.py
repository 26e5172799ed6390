"""The pre-training runs (arms) in the background: launch, supervise, stop, poll.

``launch`` starts a supervisor in a new session (``setsid``), so it and the runs outlive
the device call that started them. The supervisor starts every arm side by side,
samples their steps into ``progress.jsonl``, stops them at the plan's hard deadline
(their last checkpoint then stands) and records exit codes in ``status.json``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpu_common import REPO, Work, arm_names, read_json, read_run_log, write_json

SAMPLE_SECONDS = 10


def launch(work: Work) -> subprocess.Popen:
    """Start the supervisor detached (its pid also goes to ``supervisor.pid``)."""
    log = (work.logs / "supervisor.log").open("a")
    cmd = [
        sys.executable,
        str(Path(__file__).with_name("gpu_pretrain.py")),
        "supervise",
        "--work",
        str(work.root),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    (work.root / "supervisor.pid").write_text(str(proc.pid))
    return proc


def supervisor_alive(work: Work) -> bool:
    """Whether the supervisor still runs (later calls: it is no child of theirs)."""
    try:
        os.kill(int((work.root / "supervisor.pid").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _sample(work: Work) -> None:
    record = {"t": time.time()}
    for name in arm_names(work):
        train, _ = read_run_log(work.run(name))
        record[name] = train[-1]["step"] if train else 0
    with work.progress.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def supervise(work: Work) -> None:
    """Run every arm to its end or to the hard deadline (the supervisor's body)."""
    plan = read_json(work.plan)
    status = {"supervisor_pid": os.getpid(), "runs": {}}
    procs = {}
    for objective in plan["runs"]:
        run = plan["runs"][objective]
        Path(run["dir"]).mkdir(parents=True, exist_ok=True)
        log = (work.logs / f"{objective}.log").open("w")
        procs[objective] = subprocess.Popen(
            run["cmd"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT
        )
        status["runs"][objective] = {
            "pid": procs[objective].pid,
            "state": "running",
            "started": time.time(),
        }
    write_json(work.status, status)
    last_sample = 0.0
    while any(p.poll() is None for p in procs.values()):
        now = time.time()
        if now - last_sample >= SAMPLE_SECONDS:
            _sample(work)
            last_sample = now
        if now > plan["hard_deadline"]:
            for objective, proc in procs.items():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    status["runs"][objective]["state"] = "stopped at the hard deadline"
            write_json(work.status, status)
            plan["hard_deadline"] = float("inf")  # signal once; then wait for them
        for objective, proc in procs.items():
            _record_end(status["runs"][objective], proc)
        write_json(work.status, status)
        time.sleep(1)
    _sample(work)
    for objective, proc in procs.items():
        _record_end(status["runs"][objective], proc)
    write_json(work.status, status)


def _record_end(entry: dict, proc: subprocess.Popen) -> None:
    code = proc.poll()
    if code is None or "exit_code" in entry:
        return
    entry.update(exit_code=code, ended=time.time())
    if entry["state"] == "running":
        entry["state"] = "finished" if code == 0 else "failed"


def stop(work: Work) -> None:
    """SIGTERM the runs that are still alive (their last checkpoint stands)."""
    status = read_json(work.status, {"runs": {}})
    for objective, entry in status["runs"].items():
        if "exit_code" not in entry:
            try:
                os.kill(entry["pid"], signal.SIGTERM)
                print(f"{objective}: sent SIGTERM to pid {entry['pid']}")
            except ProcessLookupError:
                pass


def all_ended(work: Work) -> bool:
    status = read_json(work.status)
    if not status or not status.get("runs"):
        return False
    return all("exit_code" in e for e in status["runs"].values())


def wait(work: Work, seconds: float, every: float = 60.0) -> None:
    """Sleep until ``seconds`` passed or every run ended; a progress line every ``every`` s."""
    end = time.time() + seconds
    next_line = time.time() + every
    while time.time() < end and not all_ended(work) and supervisor_alive(work):
        time.sleep(min(2.0, max(0.0, end - time.time())))
        if time.time() >= next_line:
            print(one_line(work), flush=True)
            next_line += every


def one_line(work: Work) -> str:
    parts = [time.strftime("%H:%M:%S")]
    for objective in arm_names(work):
        train, _ = read_run_log(work.run(objective))
        last = train[-1] if train else {}
        parts.append(
            f"{objective} step {last.get('step', 0)} loss {last.get('loss', float('nan')):.3f}"
        )
    return " | ".join(parts)
