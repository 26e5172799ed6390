"""The benchmark step of ``start``: DAG loss and one pre-training step, one summary table,
and the number of steps both runs get."""

from __future__ import annotations

import math
from pathlib import Path

from gpu_common import Clock, Work, python, read_json, run_logged

DTYPES = ("fp32", "bf16")
COMPILE_SECONDS = 200  # longest the compiled step benchmark may take out of the first call


def run_benchmarks(
    work: Work,
    prepared: Path,
    presets: list[str],
    tokens: int,
    dry_run: bool,
    clock: Clock,
    reserve: float,
    compile_rows: bool = False,
    dag: bool = True,
) -> None:
    """Time one pre-training step of ExLM and its twin per preset (first: the plan uses
    it), then the DAG loss (Triton vs reference, fp32 and bf16); tables and JSON go to
    ``work.bench``. A benchmark that would eat into the ``reserve`` seconds the launch
    needs is cut short or skipped: the training comes first."""
    work.bench.mkdir(parents=True, exist_ok=True)
    device = "cpu" if dry_run else "cuda"
    _step_benchmark(work, prepared, presets, tokens, dry_run, clock, reserve, compile_rows)
    for dtype in DTYPES if dag else ():
        cmd = [
            python(),
            "benchmarks/pretraining/dag_loss.py",
            "--device",
            device,
            "--dtype",
            dtype,
            "--out",
            str(work.bench / f"dag_loss_{dtype}.md"),
            "--json",
            str(work.bench / f"dag_loss_{dtype}.json"),
        ]
        if dry_run:
            cmd += ["--tiny", "--repeats", "1"]
        log = work.logs / f"dag_loss_{dtype}.log"
        run_logged(f"DAG loss {dtype}", cmd, log, timeout=min(300, clock.left() - reserve))


def _step_benchmark(work, prepared, presets, tokens, dry_run, clock, reserve,
                    compile_rows) -> None:
    device = "cpu" if dry_run else "cuda"
    cmd = [
        python(),
        "benchmarks/pretraining/pretrain_step.py",
        "--prepared",
        str(prepared),
        "--device",
        device,
        "--presets",
        *presets,
        "--tokens",
        str(tokens),
        "--json",
        str(work.bench / "pretrain_step.json"),
    ]
    cmd += ["--repeats", "1", "--warmup", "1"] if dry_run else ["--repeats", "10", "--warmup", "3"]
    log = work.logs / "pretrain_step.log"
    run_logged("pre-training step", cmd, log, timeout=min(300, clock.left() - reserve))
    if log.exists():  # the step benchmark's own table, for the gathered results
        (work.bench / "pretrain_step.md").write_text(log.read_text(errors="replace"))
    if compile_rows:  # apart, so that a long compilation cannot cost the eager figures
        json_at = cmd.index("--json") + 1
        cmd[json_at] = str(work.bench / "pretrain_step_compile.json")
        log = work.logs / "pretrain_step_compile.log"
        # on CPU, inductor would build C++ (a minute of CI) where the GPU builds Triton:
        # the dry run checks what both share, dynamo's capture and the backward graphs
        backend = ["--compile-backend", "aot_eager"] if dry_run else []
        run_logged("pre-training step, compiled beside eager", [*cmd, "--compile", *backend],
                   log, timeout=min(COMPILE_SECONDS, clock.left() - reserve))
        if log.exists():
            (work.bench / "pretrain_step_compile.md").write_text(log.read_text(errors="replace"))


def summary(work: Work) -> str:
    """One markdown screen: DAG loss speed-ups and pre-training step figures."""
    lines = [
        "| DAG loss workload | dtype | reference full ms | Triton fwd / bwd / full ms "
        "| speed-up (full) | check |",
        "|---|---|---|---|---|---|",
    ]
    for dtype in DTYPES:
        data = read_json(work.bench / f"dag_loss_{dtype}.json", {"rows": []})
        ref = {r["workload"]["name"]: r for r in data["rows"] if r["impl"] == "reference"}
        for r in data["rows"]:
            base = ref.get(r["workload"]["name"])
            if r["impl"] != "triton" or base is None:
                continue
            lines.append(
                f"| {r['workload']['name']} (B={r['workload']['batch']}, "
                f"S={r['workload']['states']}) | {dtype} | {base['full_ms']:.3f} | "
                f"{r['fwd_ms']:.3f} / {r['bwd_ms']:.3f} / {r['full_ms']:.3f} | "
                f"{base['full_ms'] / r['full_ms']:.2f}x | {r['check']} |"
            )
        if not data["rows"]:
            lines.append(f"| (no result: see logs/dag_loss_{dtype}.log, or --skip-dag) "
                         f"| {dtype} | | | | |")
    step = read_json(work.bench / "pretrain_step.json", {"rows": []})
    compiled = read_json(work.bench / "pretrain_step_compile.json", {"rows": []})
    lines += [
        "",
        "| preset | variant | step ms | tokens/s | model TFLOP/s | MFU | peak GiB | ExLM / MLM "
        "| warm-up s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in [*step["rows"], *compiled["rows"]]:
        beside = r in compiled["rows"]  # the compile run's own eager rows: its baseline
        ratio = exlm_over_mlm(compiled["rows"] if beside else step["rows"], r)
        variant = f"{r['variant']} (compile run)" if beside and not r["compiled"] else r["variant"]
        mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") is not None else "n/a"
        peak = f"{r['peak_gib']:.2f}" if r.get("peak_gib") is not None else "n/a"
        lines.append(
            f"| {r['preset']} | {variant} | {1e3 * r['seconds']:.1f} | "
            f"{r['tokens_per_s']:,.0f} | {r['model_tflops_per_s']:.1f} | {mfu} | "
            f"{peak} | {ratio} | {r['warmup_s']:.1f} |"
        )
    if not step["rows"]:
        lines.append("| (no result: see logs/pretrain_step.log) | | | | | | | | |")
    if step.get("env"):
        lines.append(
            f"\nMFU against {step['env']['peak_tflops']:g} TFLOP/s (H100 SXM bf16 "
            "dense); FLOPs as in benchmarks/pretraining/pretrain_step.py's docstring"
        )
    return "\n".join(lines)


def exlm_over_mlm(rows: list[dict], row: dict) -> str:
    """ExLM's step time over its twin's (same preset, both eager or both compiled)."""
    if row["objective"] != "exlm":
        return ""
    twin = [r for r in rows if r["preset"] == row["preset"] and r["objective"] == "mlm"
            and r["compiled"] == row["compiled"]]
    return f"{row['seconds'] / twin[0]['seconds']:.2f}" if twin else ""


def decide_max_steps(
    work: Work, preset: str, objectives: list[str], train_minutes: float,
    startup_minutes: float, safety: float
) -> tuple[int | None, str]:
    """Steps that every arm (its objective in ``objectives``) can finish side by side in
    ``train_minutes``.

    The arms share one GPU, so a round of steps is taken to cost the sum of their eager
    steps measured alone (each alone keeps the GPU busy; if they overlap better the runs
    simply end early). ``safety`` covers the input pipeline and checkpoints.
    Returns ``(None, reason)`` when the step benchmark has no figure for ``preset``.
    """
    rows = read_json(work.bench / "pretrain_step.json", {"rows": []})["rows"]
    times = {r["objective"]: r["seconds"] for r in rows
             if r["preset"] == preset and not r["compiled"]}
    if set(times) != {"exlm", "mlm"}:
        return None, f"no step time for preset {preset!r} in bench/pretrain_step.json"
    round_s = sum(times[o] for o in objectives)
    usable = max(0.0, train_minutes - startup_minutes) * 60 * safety
    steps = max(1, math.floor(usable / round_s))
    each = " + ".join(f"{o} {1e3 * times[o]:.1f}" for o in objectives)
    reason = (
        f"{steps} steps = {safety:g} x ({train_minutes:g} - {startup_minutes:g} min "
        f"start-up) / ({each} ms per step, measured alone)"
    )
    return steps, reason
