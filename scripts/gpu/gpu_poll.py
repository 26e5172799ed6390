"""One short screen on the background runs (steps, loss, tokens/s, ETA, checkpoints),
and the training table of the final report."""

from __future__ import annotations

import json
import subprocess
import time

import gpu_runs
from gpu_common import Work, arm_names, read_json, read_run_log

RATE_WINDOW = 120.0  # seconds of progress samples behind a rate (and so an ETA)


def _rates(work: Work) -> dict[str, float]:
    """Steps per second of each run over the last RATE_WINDOW seconds of samples."""
    try:
        samples = [json.loads(x) for x in work.progress.read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        return {}
    if len(samples) < 2:
        return {}
    last = samples[-1]
    first = next((s for s in samples if last["t"] - s["t"] <= RATE_WINDOW), samples[0])
    span = last["t"] - first["t"]
    if span <= 0:
        return {}
    return {o: (last[o] - first[o]) / span for o in arm_names(work) if o in last and o in first}


def _checkpoint(work: Work, objective: str) -> str:
    meta_path = work.run(objective) / "checkpoint" / "metadata.json"
    meta = read_json(meta_path)
    if not meta:
        return "none yet"
    age = (time.time() - meta_path.stat().st_mtime) / 60
    tokens = meta.get("tokens_seen", 0)
    return f"step {meta.get('steps')}, {tokens / 1e6:.1f}M tokens, {age:.1f} min ago"


def _gpu_line() -> str:
    try:
        out = (
            subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=utilization.gpu,memory.used,memory.total",
                    "--format=csv,noheader,nounits",
                ],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
            .stdout.strip()
            .splitlines()[0]
        )
        util, used, total = (float(x) for x in out.split(","))
        return f"GPU {util:.0f}% busy, {used / 1024:.1f} / {total / 1024:.1f} GiB"
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return "GPU: nvidia-smi not available"


def planned_steps(work: Work, plan: dict, objective: str) -> int | None:
    """The plan's steps, or the run's own decision after its budget probe (budget.json)."""
    if plan.get("max_steps"):
        return plan["max_steps"]
    return (read_json(work.run(objective) / "budget.json") or {}).get("max_steps")


def screen(work: Work) -> str:
    """The poll screen (about 10 lines)."""
    plan = read_json(work.plan)
    if not plan:
        return f"no plan in {work.root}: has `start` run on this machine?"
    status = read_json(work.status, {"runs": {}})
    now = time.time()
    elapsed = (now - plan["train_start"]) / 60
    left = (plan["hard_deadline"] - now) / 60
    lines = [
        f"[poll {time.strftime('%H:%M:%S')}] {plan['device']} | {plan['preset']}"
        f" | {plan['max_tokens']} tokens/step | training for "
        f"{elapsed:.1f} of {plan['train_minutes']:g} min, hard stop in {left:.1f} min",
        f"{'run':9s} {'state':10s} {'step':>15s} {'loss':>7s} {'valid':>7s} {'tok/s':>9s} "
        f"{'ETA min':>8s}  checkpoint",
    ]
    rates = _rates(work)
    tails = []
    for objective in arm_names(work):
        entry = status["runs"].get(objective, {"state": "not started"})
        train, valid = read_run_log(work.run(objective))
        step = train[-1]["step"] if train else 0
        loss = f"{train[-1]['loss']:.3f}" if train else "-"
        vloss = f"{valid[-1]['valid_loss']:.3f}" if valid else "-"
        rate = f"{train[-1].get('tokens_per_s', 0):,.0f}" if train else "-"
        eta, total = "-", planned_steps(work, plan, objective)
        if entry["state"] == "running" and rates.get(objective) and total:
            eta = f"{(total - step) / rates[objective] / 60:.1f}"
        pct = f"{step}/{total or 'probing'}"
        lines.append(
            f"{objective:9s} {entry['state'][:10]:10s} {pct:>15s} {loss:>7s} {vloss:>7s} "
            f"{rate:>9s} {eta:>8s}  {_checkpoint(work, objective)}"
        )
        if entry["state"] not in ("running", "finished"):
            log = work.logs / f"{objective}.log"
            text = log.read_text(errors="replace").splitlines() if log.exists() else []
            tails += [f"  {objective}: {x[:150]}" for x in text[-6:]]
    lines.append(_gpu_line())
    if not gpu_runs.all_ended(work) and not gpu_runs.supervisor_alive(work):
        log = work.logs / "supervisor.log"
        text = log.read_text(errors="replace").splitlines() if log.exists() else []
        tails += ["supervisor not running (status may be stale); its log ends:"]
        tails += [f"  {x[:150]}" for x in text[-8:]]
    return "\n".join(lines + tails)


def training_table(work: Work) -> str:
    plan = read_json(work.plan, {})
    status = read_json(work.status, {"runs": {}})
    lines = [
        f"Training: preset {plan.get('preset')}, steps {plan.get('steps', {}).get('reason')};"
        f" {plan.get('max_tokens')} padded tokens per step; all runs side by side on one "
        "device",
        "Checks before training: "
        + ", ".join(f"{k} {v}" for k, v in plan.get("checks", {}).items()),
        "",
        "| run | state | steps done / planned | tokens seen | last loss (mean of 10 logs) "
        "| valid loss | valid accuracy | valid descriptor MSE | median tokens/s | minutes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for objective in arm_names(work):
        entry = status["runs"].get(objective, {})
        train, valid = read_run_log(work.run(objective))
        meta = read_json(work.run(objective) / "checkpoint" / "metadata.json", {})
        losses = [r["loss"] for r in train[-10:]]
        rates = sorted(r.get("tokens_per_s", 0) for r in train)
        v = valid[-1] if valid else {}
        minutes = (entry.get("ended", time.time()) - entry.get("started", time.time())) / 60
        lines.append(
            f"| {objective} | {entry.get('state', 'not started')} | "
            f"{train[-1]['step'] if train else 0} / {planned_steps(work, plan, objective)}"
            f" (checkpoint at {meta.get('steps', '-')}) | {meta.get('tokens_seen', 0):,} | "
            f"{sum(losses) / len(losses) if losses else float('nan'):.4f} | "
            f"{v.get('valid_loss', float('nan')):.4f} | {v.get('valid_accuracy', float('nan')):.4f}"
            f" | {v.get('valid_aux_loss', float('nan')):.4f}"
            f" | {rates[len(rates) // 2] if rates else 0:,.0f} | {minutes:.1f} |"
        )
    return "\n".join(lines)
