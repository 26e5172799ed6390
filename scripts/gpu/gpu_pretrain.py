"""Pre-train ExLM and its MLM twin side by side on one GPU, within a short device lease.

    start    install (no deps), `pytest -m gpu`, benchmarks (DAG loss; one pre-training
             step of ExLM and its twin), then both runs in the background, same steps
    poll     one screen: steps, loss, tokens/s, ETA, checkpoints (--wait S sleeps first)
    gather   fp16 checkpoints, logs, tables, curves into --out ($OUT): 6 files
    stop     end the runs now (their last checkpoint stands)
    unpack   on the CPU side: check a gathered folder and rebuild checkpoint folders

``--dry-run`` does the same on CPU with the tiny preset (CI runs it). See
scripts/gpu/README.md for the device-tool commands and the expected figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import gpu_bench
import gpu_gather
import gpu_poll
import gpu_runs
from gpu_common import (
    DEFAULT_WORK,
    OBJECTIVES,
    REPO,
    Work,
    environment,
    python,
    read_json,
    read_run_log,
    run_logged,
    write_json,
)

SAFETY = 0.9  # share of the measured step budget planned for (pipeline, checkpoints)
GRACE_MINUTES = 1.0  # past the budget, the supervisor stops what still runs


def _check_prepared(prepared: Path) -> None:
    if not (prepared / "manifest.json").is_file():
        raise SystemExit(
            f"{prepared}/manifest.json not found: carry the prepared corpus "
            "(exlm-chem corpus prepare --out prepared/...; see README)"
        )


def _run_command(args, work: Work, objective: str, steps: dict) -> list[str]:
    """``exlm-chem pretrain`` for one objective; ``steps`` says who fixes the step count."""
    other = work.run("mlm" if objective == "exlm" else "exlm")
    cmd = [
        python(),
        "-m",
        "exlm_chem.cli",
        "pretrain",
        "--prepared",
        str(args.prepared),
        "--preset",
        args.preset,
        "--objective",
        objective,
        "--out",
        str(work.run(objective)),
        "--max-tokens",
        str(args.max_tokens),
        "--warmup-steps",
        str(steps["warmup"]),
        "--checkpoint-every",
        str(steps["every"]),
        "--valid-every",
        str(steps["every"]),
        "--log-every",
        str(steps["log_every"]),
        "--num-workers",
        str(args.num_workers),
        "--device",
        "cpu" if args.dry_run else "cuda",
        "--no-progress",
    ]
    if steps["max_steps"] is not None:
        cmd += ["--max-steps", str(steps["max_steps"])]
    else:  # both probe their pace side by side, then both take the smaller step count
        cmd += ["--budget-minutes", f"{args.minutes:g}", "--budget-from", str(other)]
    return cmd + (["--compile"] if args.compile else []) + args.train_arg


def _steps(args: argparse.Namespace, work: Work) -> dict:
    """Step count (or None: decided by the runs' budget probe), warm-up, checkpoint and
    log intervals; the intervals come from the expected count (the step benchmark)."""
    expected, reason = gpu_bench.decide_max_steps(
        work, args.preset, args.minutes, args.startup_minutes, SAFETY
    )
    if args.max_steps is not None:
        max_steps, how = args.max_steps, "--max-steps"
    elif args.steps_from == "bench":
        if expected is None:
            raise SystemExit(f"cannot plan the steps ({reason}): pass --max-steps")
        max_steps, how = expected, f"from the step benchmark: {reason}"
    else:
        max_steps, how = (
            None,
            (
                f"decided by both runs after a pace probe side by side "
                f"(--budget-minutes {args.minutes:g} --budget-from the other); "
                f"step benchmark expects {reason}"
            ),
        )
    basis = max_steps or expected or 3000  # 3000: a guess, only for the intervals
    return {
        "max_steps": max_steps,
        "expected": expected,
        "reason": how,
        "warmup": max(1, round(args.warmup_share * basis)),
        "every": max(1, round(basis * args.checkpoint_minutes / args.minutes)),
        "log_every": max(1, basis // 300),
    }


def start(args: argparse.Namespace) -> int:
    import torch

    work = Work(args.work)
    if read_json(work.status) and not gpu_runs.all_ended(work):
        raise SystemExit(f"runs in {work.root} are still going: poll, or stop them first")
    if not torch.cuda.is_available() and not args.dry_run:
        raise SystemExit("no CUDA device here: use --dry-run to rehearse on CPU")
    _check_prepared(args.prepared)
    shutil.rmtree(work.root, ignore_errors=True)
    work.logs.mkdir(parents=True)
    env = environment()
    write_json(work.env, env)
    print("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)

    if args.dry_run or args.skip_install:
        print("\n== install: skipped" + (" (dry run)" if args.dry_run else ""))
    else:
        cmd = [python(), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", "."]
        if run_logged("install", cmd, work.logs / "install.log", timeout=300):
            print("   install failed: going on with PYTHONPATH (set by pretrain.sh)")
    if torch.cuda.is_available():
        cmd = [
            python(),
            "-m",
            "pytest",
            "-m",
            "gpu",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit/test_dag_triton.py",
        ]
        if run_logged("pytest -m gpu", cmd, work.logs / "pytest_gpu.log", timeout=420):
            if not args.allow_check_failure:
                raise SystemExit(
                    "the Triton kernel differs from the reference on this GPU: "
                    "not training (see logs/pytest_gpu.log)"
                )
    else:
        print("\n== pytest -m gpu: skipped, no CUDA device (dry run)")

    presets = list(dict.fromkeys([*args.bench_presets, args.preset]))
    if not args.skip_bench:
        gpu_bench.run_benchmarks(work, args.prepared, presets, args.max_tokens, args.dry_run)
        print("\n" + gpu_bench.summary(work), flush=True)
    steps = _steps(args, work)
    now = time.time()
    plan = {
        "preset": args.preset,
        "max_steps": steps["max_steps"],
        "steps": steps,
        "max_tokens": args.max_tokens,
        "train_minutes": args.minutes,
        "train_start": now,
        "hard_deadline": now + 60 * (args.minutes + GRACE_MINUTES),
        "device": env["device"],
        "env": {"OMP_NUM_THREADS": "1"} if args.dry_run else {},
        "runs": {
            o: {"dir": str(work.run(o)), "cmd": _run_command(args, work, o, steps)}
            for o in OBJECTIVES
        },
    }
    write_json(work.plan, plan)
    print(
        f"\n== plan: {steps['reason']}; checkpoint every {steps['every']} steps; hard stop "
        f"at {time.strftime('%H:%M:%S', time.localtime(plan['hard_deadline']))}"
    )
    pid = gpu_runs.launch(work)
    print(f"== both runs started under supervisor pid {pid} (logs in {work.logs})", flush=True)
    deadline = time.time() + args.first_wait
    while time.time() < deadline and not gpu_runs.all_ended(work):
        if all(read_run_log(work.run(o))[0] for o in OBJECTIVES):
            break
        time.sleep(2)
    print("\n" + gpu_poll.screen(work))
    failed = [
        o
        for o, e in read_json(work.status, {"runs": {}})["runs"].items()
        if e.get("state") == "failed"
    ]
    return 1 if failed else 0


def _training_table(work: Work) -> str:
    plan = read_json(work.plan, {})
    status = read_json(work.status, {"runs": {}})
    lines = [
        f"Training: preset {plan.get('preset')}, steps {plan.get('steps', {}).get('reason')};"
        f" {plan.get('max_tokens')} padded tokens per step; both runs side by side on one "
        "device",
        "",
        "| run | state | steps done / planned | tokens seen | last loss (mean of 10 logs) "
        "| valid loss | valid accuracy | median tokens/s | minutes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for objective in OBJECTIVES:
        entry = status["runs"].get(objective, {})
        train, valid = read_run_log(work.run(objective))
        meta = read_json(work.run(objective) / "checkpoint" / "metadata.json", {})
        losses = [r["loss"] for r in train[-10:]]
        rates = sorted(r.get("tokens_per_s", 0) for r in train)
        v = valid[-1] if valid else {}
        minutes = (entry.get("ended", time.time()) - entry.get("started", time.time())) / 60
        lines.append(
            f"| {objective} | {entry.get('state', 'not started')} | "
            f"{train[-1]['step'] if train else 0} / {gpu_poll.planned_steps(work, plan, objective)}"
            f" (checkpoint at {meta.get('steps', '-')}) | {meta.get('tokens_seen', 0):,} | "
            f"{sum(losses) / len(losses) if losses else float('nan'):.4f} | "
            f"{v.get('valid_loss', float('nan')):.4f} | {v.get('valid_accuracy', float('nan')):.4f}"
            f" | {rates[len(rates) // 2] if rates else 0:,.0f} | {minutes:.1f} |"
        )
    return "\n".join(lines)


def gather(args: argparse.Namespace) -> int:
    work = Work(args.work)
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    if out is None:
        raise SystemExit("gather needs --out DIR (or $OUT)")
    if args.wait:
        gpu_runs.wait(work, args.wait)
    if not gpu_runs.all_ended(work):
        print("runs still going: gathering their latest checkpoints")
    env = read_json(work.env, {})
    report = "\n".join(
        [
            "# exlm_chem GPU pre-training: ExLM and its MLM twin side by side",
            "",
            "- " + ", ".join(f"{k} {v}" for k, v in env.items()),
            "",
            gpu_bench.summary(work),
            "",
            _training_table(work),
            "",
        ]
    )
    plan = read_json(work.plan, {})
    manifest = gpu_gather.gather(
        work, out, plan.get("preset", "small"), report, gpu_gather.plot_curves
    )
    print(report)
    for name, entry in manifest["files"].items():
        print(f"{entry['bytes']:>12,}  {name}")
    for line in manifest["missing"]:
        print(f"MISSING: {line}")
    return 1 if any("no checkpoint" in m for m in manifest["missing"]) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="install, check, benchmark, start both runs")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny preset, a few steps")
    p.add_argument("--prepared", type=Path, default=REPO / "prepared" / "moses_chembl")
    p.add_argument("--minutes", type=float, default=18.0, help="training wall time")
    p.add_argument("--preset", default="small", help="the preset trained")
    p.add_argument("--bench-presets", nargs="+", default=["small", "base"])
    p.add_argument("--max-tokens", type=int, default=65536, help="padded tokens per step")
    p.add_argument("--max-steps", type=int, help="fixed steps for both runs (no probe)")
    p.add_argument(
        "--steps-from",
        choices=("budget", "bench"),
        default="budget",
        help="budget: the runs probe their pace side by side and take the smaller "
        "step count; bench: from the step benchmark (both measured alone)",
    )
    p.add_argument("--warmup-share", type=float, default=0.06, help="warm-up / max steps")
    p.add_argument("--checkpoint-minutes", type=float, default=3.0)
    p.add_argument(
        "--startup-minutes",
        type=float,
        default=1.0,
        help="process start, corpus load, CUDA init, pace probe (for the estimate)",
    )
    p.add_argument("--num-workers", type=int, default=6, help="DataLoader workers per run")
    p.add_argument("--compile", action="store_true", help="torch.compile both runs")
    p.add_argument("--train-arg", action="append", default=[], help="extra pretrain flag")
    p.add_argument(
        "--first-wait",
        type=float,
        default=180.0,
        help="seconds to wait for both runs' first log record",
    )
    p.add_argument("--skip-install", action="store_true")
    p.add_argument("--skip-bench", action="store_true")
    p.add_argument("--allow-check-failure", action="store_true")
    for name, text in (
        ("supervise", "(internal) run both trainings"),
        ("poll", "one screen"),
        ("stop", "end the runs now"),
        ("gather", "collect results"),
    ):
        q = sub.add_parser(name, help=text)
        q.add_argument("--work", type=Path, default=DEFAULT_WORK)
        if name in ("poll", "gather"):
            q.add_argument("--wait", type=float, default=0.0, help="seconds to wait first")
        if name == "gather":
            q.add_argument("--out", type=Path, help="result folder (default $OUT)")
    p.add_argument("--work", type=Path, default=DEFAULT_WORK)
    u = sub.add_parser("unpack", help="check a gathered folder, rebuild checkpoints")
    u.add_argument("source", type=Path)
    u.add_argument("dest", type=Path)
    args = parser.parse_args(argv)

    if args.command == "start":
        if args.dry_run:  # the same steps, CPU-sized
            args.preset, args.bench_presets = "tiny", ["tiny"]
            args.max_tokens, args.num_workers = min(args.max_tokens, 256), min(args.num_workers, 1)
            # fixed steps: a pace probe on a shared CPU would make the step count (and, at
            # its hard stop, the steps done) depend on the load; checkpoints at 4 and 8
            args.max_steps = args.max_steps or 8
            args.minutes, args.checkpoint_minutes, args.startup_minutes = 2.0, 1.0, 0.1
        return start(args)
    if args.command == "supervise":
        gpu_runs.supervise(Work(args.work))
    elif args.command == "poll":
        gpu_runs.wait(Work(args.work), args.wait)
        print(gpu_poll.screen(Work(args.work)))
    elif args.command == "stop":
        gpu_runs.stop(Work(args.work))
    elif args.command == "gather":
        return gather(args)
    elif args.command == "unpack":
        for run in gpu_gather.unpack(args.source, args.dest):
            print(f"checkpoint: {run / 'checkpoint'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
