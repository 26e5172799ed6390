"""Pre-train ExLM and its MLM twin side by side on one GPU, within a short device lease.

    start    install (no deps), descriptor targets (--descriptors, in the background),
             `pytest -m gpu`, benchmarks (DAG loss; one pre-training step of ExLM and its
             twin, eager and --bench-compile), then every arm (default: ExLM and its twin)
             in the background, same steps
    poll     one screen: steps, loss, tokens/s, ETA, checkpoints (--wait S sleeps first)
    gather   fp16 checkpoints (one per arm), logs, tables, curves into --out ($OUT)
    stop     end the runs now (their last checkpoint stands)
    unpack   on the CPU side: check a gathered folder and rebuild checkpoint folders

``--dry-run`` does the same on CPU with the tiny preset (CI runs it). See
scripts/gpu/README.md for the device-tool commands and the expected figures.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import gpu_bench
import gpu_gather
import gpu_poll
import gpu_runs
import gpu_start
from gpu_common import DEFAULT_WORK, REPO, Work, read_json


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
            gpu_poll.training_table(work),
            "",
        ]
    )
    plan = read_json(work.plan, {})
    manifest = gpu_gather.gather(
        work, out, plan.get("preset", "small"), report, gpu_gather.plot_curves, args.arms
    )
    print(report)
    for name, entry in manifest["files"].items():
        print(f"{entry['bytes']:>12,}  {name}")
    for line in manifest["missing"]:
        print(f"MISSING: {line}")
    return 1 if any("no checkpoint" in m for m in manifest["missing"]) else 0


def parser() -> argparse.ArgumentParser:
    """The command line of every subcommand."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="install, check, benchmark, start both runs")
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny preset, a few steps")
    p.add_argument("--prepared", type=Path, default=REPO / "prepared" / "moses_chembl")
    p.add_argument("--minutes", type=float, default=16.0, help="training wall time")
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
    p.add_argument("--snapshots", type=int, default=0,
                   help="keep each arm's weights at this many evenly spaced steps before the "
                        "end; gather brings back as many as fit the 8 files")
    p.add_argument(
        "--startup-minutes",
        type=float,
        default=1.0,
        help="process start, corpus load, CUDA init, pace probe (for the estimate)",
    )
    p.add_argument("--num-workers", type=int, default=6, help="DataLoader workers per run")
    p.add_argument("--compile", action="store_true", help="torch.compile both runs")
    p.add_argument("--train-arg", action="append", default=[],
                   help="extra pretrain flag, every arm")
    p.add_argument("--arm", action="append", default=[], metavar="'NAME OBJECTIVE [FLAG ...]'",
                   help="a run of its own, e.g. 'exlm-d10 exlm --aux-weight 10' (repeat; "
                        "default: 'exlm exlm' and 'mlm mlm'); all train side by side, the "
                        "same steps on the same batches")
    p.add_argument("--descriptors", choices=("rdkit2d", "rdkit2d_fast", "morgan"),
                   help="compute these descriptor targets into --prepared first (every core, "
                        "beside the GPU checks), for arms with --aux-weight")
    p.add_argument("--wheels", type=Path,
                   help="folder of wheels (RDKit) installed for --descriptors alone")
    p.add_argument("--bench-compile", action="store_true",
                   help="the step benchmark also times torch.compile'd steps (eager beside)")
    p.add_argument("--skip-dag", action="store_true", help="no DAG-loss benchmark tables")
    p.add_argument(
        "--first-wait",
        type=float,
        default=180.0,
        help="seconds to wait for both runs' first log record",
    )
    p.add_argument(
        "--call-seconds",
        type=float,
        default=560.0,
        help="this call's time (the device tool stops a command at 600 s): benchmarks "
        "that would leave too little for the launch are skipped",
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
            q.add_argument("--arms", nargs="+", metavar="ARM",
                           help="these arms' weights alone (a further call, for what the "
                                "first gather had no room for)")
    p.add_argument("--work", type=Path, default=DEFAULT_WORK)
    u = sub.add_parser("unpack", help="check a gathered folder, rebuild checkpoints")
    u.add_argument("source", type=Path)
    u.add_argument("dest", type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    if args.command == "start":
        if args.dry_run:  # the same steps, CPU-sized
            os.environ["OMP_NUM_THREADS"] = "1"  # tiny shapes: more threads only spin-wait
            args.preset, args.bench_presets = "tiny", ["tiny"]
            args.max_tokens, args.num_workers = min(args.max_tokens, 256), min(args.num_workers, 1)
            # fixed steps: a pace probe on a shared CPU would make the step count (and, at
            # its hard stop, the steps done) depend on the load; checkpoints at 4 and 8
            args.max_steps = args.max_steps or 8
            args.minutes, args.checkpoint_minutes, args.startup_minutes = 2.0, 1.0, 0.1
        return gpu_start.start(args)
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
