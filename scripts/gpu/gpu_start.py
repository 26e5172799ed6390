"""The ``start`` sequence on the GPU machine: install, descriptor targets, check, benchmark,
plan, launch."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

import gpu_bench
import gpu_poll
import gpu_runs
from gpu_common import (
    DEFAULT_ARMS,
    REPO,
    Arm,
    Clock,
    Work,
    environment,
    parse_arm,
    python,
    read_json,
    read_run_log,
    run_logged,
    verdict,
    write_json,
)

SAFETY = 0.9  # share of the measured step budget planned for (pipeline, checkpoints)
LAUNCH_RESERVE = 150.0  # seconds of the first call kept for the launch and its first wait
GRACE_MINUTES = 1.0  # past the budget, the supervisor stops what still runs


def _check_prepared(prepared: Path) -> None:
    if not (prepared / "manifest.json").is_file():
        raise SystemExit(
            f"{prepared}/manifest.json not found: carry the prepared corpus "
            "(exlm-chem corpus prepare --out prepared/...; see README)"
        )


def arms_of(args: argparse.Namespace) -> list[Arm]:
    """The arms asked for (``--arm``, else ExLM and its twin); names must be distinct."""
    arms = [parse_arm(text) for text in (args.arm or DEFAULT_ARMS)]
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise SystemExit(f"arm names must be distinct, got {names}")
    return arms


def run_command(args, work: Work, arm: Arm, arms: list[Arm], steps: dict) -> list[str]:
    """``exlm-chem pretrain`` for one arm; ``steps`` says who fixes the step count."""
    partners = [str(work.run(a.name)) for a in arms if a.name != arm.name]
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
        arm.objective,
        "--out",
        str(work.run(arm.name)),
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
    if steps.get("snapshot_every"):
        cmd += ["--snapshot-every", str(steps["snapshot_every"])]
    if steps["max_steps"] is not None:
        cmd += ["--max-steps", str(steps["max_steps"])]
    else:  # all probe their pace side by side, then all take the smallest step count
        cmd += ["--budget-minutes", f"{args.minutes:g}"]
        cmd += ["--budget-from", *partners] if partners else []
    return cmd + (["--compile"] if args.compile else []) + args.train_arg + list(arm.flags)


def start_descriptors(args: argparse.Namespace, work: Work) -> subprocess.Popen | None:
    """Compute the ``--descriptors`` targets into the carried corpus in the background
    (``exlm-chem corpus descriptors`` over every core), RDKit from the carried ``--wheels``
    when the machine has none; None when the corpus holds that kind already."""
    manifest = read_json(Path(args.prepared) / "manifest.json", {})
    if manifest.get("descriptors", {}).get("kind") == args.descriptors:
        print(f"\n== descriptors: {args.descriptors} already in {args.prepared}")
        return None
    env = dict(os.environ)
    if args.wheels:
        site = work.root / "site"
        wheels = sorted(str(p) for p in Path(args.wheels).glob("*.whl"))
        cmd = [python(), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
               "--no-compile", "--target", str(site), *wheels]
        if run_logged("install wheels", cmd, work.logs / "wheels.log", timeout=180):
            raise SystemExit(f"could not install {wheels} (logs/wheels.log)")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    cmd = [python(), "-m", "exlm_chem.cli", "corpus", "descriptors", "--prepared",
           str(args.prepared), "--kind", args.descriptors, "--n-jobs", "-1"]
    print(f"\n== descriptors (background): {' '.join(cmd)}", flush=True)
    log = (work.logs / "descriptors.log").open("w")
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_descriptors(proc: subprocess.Popen | None, work: Work, timeout: float) -> None:
    """Wait for :func:`start_descriptors`; training with missing targets must not start."""
    if proc is None:
        return
    start = time.monotonic()
    try:
        code = proc.wait(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        code = 124
    tail = (work.logs / "descriptors.log").read_text(errors="replace").splitlines()[-6:]
    for line in tail:
        print(f"   {line[:160]}")
    print(f"== descriptors: exit {code}, waited {time.monotonic() - start:.0f} s", flush=True)
    if code:
        raise SystemExit("the descriptor targets failed (logs/descriptors.log): not training")


def plan_steps(args: argparse.Namespace, work: Work) -> dict:
    """Step count (or None: decided by the runs' budget probe), warm-up, checkpoint and
    log intervals; the intervals come from the expected count (the step benchmark)."""
    expected, reason = gpu_bench.decide_max_steps(
        work, args.preset, [a.objective for a in arms_of(args)], args.minutes,
        args.startup_minutes, SAFETY
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
                f"decided by the runs after a pace probe side by side "
                f"(--budget-minutes {args.minutes:g} --budget-from the others); "
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
        # weights kept on the host at evenly spaced steps: the points of a probe curve
        "snapshot_every": max(1, round(basis / (args.snapshots + 1))) if args.snapshots else None,
    }


def start(args: argparse.Namespace) -> int:
    import torch

    clock = Clock(args.call_seconds)
    work = Work(args.work)
    if read_json(work.status) and not gpu_runs.all_ended(work):
        raise SystemExit(f"runs in {work.root} are still going: poll, or stop them first")
    if not torch.cuda.is_available() and not args.dry_run:
        raise SystemExit("no CUDA device here: use --dry-run to rehearse on CPU")
    _check_prepared(args.prepared)
    arms = arms_of(args)
    shutil.rmtree(work.root, ignore_errors=True)
    work.logs.mkdir(parents=True)
    env = environment()
    write_json(work.env, env)
    print("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)

    if args.dry_run or args.skip_install:
        print("\n== install: skipped" + (" (dry run)" if args.dry_run else ""))
    else:
        cmd = [python(), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", "."]
        if run_logged("install", cmd, work.logs / "install.log", timeout=min(240, clock.left())):
            print("   install failed: going on with PYTHONPATH (set by pretrain.sh)")
    # CPU work beside the GPU checks below; joined before the timed step benchmark
    descriptors = start_descriptors(args, work) if args.descriptors else None
    checks = {"kernel": "not run (no CUDA device)", "step": "not run (no CUDA device)"}
    if torch.cuda.is_available():
        # compiled kernels everywhere: tests/conftest.py would turn the interpreter on where
        # it finds no /dev/nvidiactl, and the check must not pass on the interpreter
        os.environ["TRITON_INTERPRET"] = "0"
        cmd = [
            python(),
            "-m",
            "pytest",
            "-m",
            "gpu",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit/dag/test_dag_triton.py",
        ]
        left = clock.left() - LAUNCH_RESERVE
        code = run_logged("pytest -m gpu", cmd, work.logs / "pytest_gpu.log",
                          timeout=min(300, left))
        checks["kernel"] = verdict(code)
        if checks["kernel"] == "failed" and not args.allow_check_failure:
            raise SystemExit(
                "the Triton kernel differs from the reference on this GPU: "
                "not training (see logs/pytest_gpu.log)"
            )
        if checks["kernel"] != "passed":
            print(f"   the Triton kernel was not checked in this call ({checks['kernel']}); "
                  "training goes on, and the plan and report say so")
        # the training step must not wait for the GPU; it reads the corpus the runs will
        # read, so the GPU machine needs no RDKit. A failure is reported, not fatal: the
        # runs stay correct, only slower.
        os.environ["EXLM_CHEM_PREPARED_CORPUS"] = str(Path(args.prepared).resolve())
        cmd = [*cmd[:-1], "tests/integration/test_pretrain.py::"
               "test_a_training_step_does_not_wait_for_the_gpu"]
        left = clock.left() - LAUNCH_RESERVE
        code = run_logged("pytest -m gpu (step)", cmd, work.logs / "pytest_gpu_step.log",
                          timeout=min(120, left))
        checks["step"] = verdict(code)
        if checks["step"] == "failed":
            print("   the training step synchronises with the GPU (logs/pytest_gpu_step.log)")
        elif checks["step"] != "passed":
            print(f"   the no-sync check of the training step: {checks['step']}, no verdict")
    else:
        print("\n== pytest -m gpu: skipped, no CUDA device (dry run)")

    wait_descriptors(descriptors, work, clock.left() - LAUNCH_RESERVE)
    presets = list(dict.fromkeys([*args.bench_presets, args.preset]))
    if not args.skip_bench:
        gpu_bench.run_benchmarks(
            work, args.prepared, presets, args.max_tokens, args.dry_run, clock, LAUNCH_RESERVE,
            compile_rows=args.bench_compile, dag=not args.skip_dag,
        )
        print("\n" + gpu_bench.summary(work), flush=True)
    steps = plan_steps(args, work)
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
        "checks": checks,
        "runs": {
            a.name: {"dir": str(work.run(a.name)), "objective": a.objective,
                     "cmd": run_command(args, work, a, arms, steps)}
            for a in arms
        },
    }
    write_json(work.plan, plan)
    print(
        f"\n== plan: {steps['reason']}; checkpoint every {steps['every']} steps; hard stop "
        f"at {time.strftime('%H:%M:%S', time.localtime(plan['hard_deadline']))}"
    )
    supervisor = gpu_runs.launch(work)
    print(f"== {len(arms)} runs started under supervisor pid {supervisor.pid} "
          f"(logs in {work.logs})")
    deadline = time.time() + min(args.first_wait, clock.left() - 15)
    while time.time() < deadline and supervisor.poll() is None:
        if all(read_run_log(work.run(a.name))[0] for a in arms):
            break
        time.sleep(2)
    print("\n" + gpu_poll.screen(work))
    failed = [
        o
        for o, e in read_json(work.status, {"runs": {}})["runs"].items()
        if e.get("state") == "failed"
    ]
    return 1 if failed else 0
