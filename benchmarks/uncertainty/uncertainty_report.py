"""Tables and the reliability diagram of the uncertainty measurements on CPU.

Reads ``probe.jsonl`` (benchmarks/uncertainty/uncertainty_probe.py) and ``finetune.jsonl``
(benchmarks/uncertainty/uncertainty_finetune.py) from ``--results``, and the test probabilities they
saved under ``--work``; writes the markdown report and the reliability-diagram PNG.

Usage: ``python benchmarks/uncertainty/uncertainty_report.py --results DIR --out FILE.md
--png FILE.png``
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.tasks import load_task
from exlm_chem.uncertainty.reliability import reliability_diagram
from exlm_chem.uncertainty.scores import probability_scores

METRICS = (("roc_auc", "ROC-AUC (%)", 100), ("brier", "Brier", 1), ("ece", "ECE", 1))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()] if path.is_file() else []


def _cell(values: list[float], scale: float) -> str:
    if not values:
        return "–"
    v = np.asarray(values, dtype=float) * scale
    digits = 1 if scale == 100 else 3
    spread = f" ± {v.std(ddof=1):.{digits}f}" if len(v) > 1 else ""
    return f"{v.mean():.{digits}f}{spread} (n={len(v)})"


def _group(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups = defaultdict(list)
    for r in rows:
        groups[(r["task"], r["variant"])].append(r)
    return groups


def augmentation_table(rows: list[dict], variants: list[str], tasks: list[str]) -> list[str]:
    groups = _group(rows)
    lines = ["| task | " + " | ".join(variants) + " |", "|---" * (len(variants) + 1) + "|"]
    for task in tasks:
        cells = [_cell([r["roc_auc"] for r in groups[(task, v)]], 100) for v in variants]
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return lines


def side_by_side(rows: list[dict], tasks: list[str]) -> list[str]:
    groups = _group(rows)
    lines = ["| task | method | " + " | ".join(m[1] for m in METRICS) + " |",
             "|---|---|---:|---:|---:|"]
    for task in tasks:
        for variant in dict.fromkeys(r["variant"] for r in rows if r["task"] == task):
            group = groups[(task, variant)]
            lines.append(f"| {task} | {variant} | " + " | ".join(
                _cell([r[m] for r in group], scale) for m, _, scale in METRICS) + " |")
    return lines


def seed_ensembles(rows: list[dict], work: Path, tasks: list[str], data_path) -> list[str]:
    """The fine-tuned models of all seeds averaged: a deep ensemble for free."""
    lines = ["| task | ensemble | members | " + " | ".join(m[1] for m in METRICS) + " |",
             "|---|---|---:|---:|---:|---:|"]
    for task in tasks:
        truth = None
        for variant in ("finetune", "finetune+aug1", "finetune+tta4", "finetune+aug1+tta4"):
            seeds = sorted({r["seed"] for r in rows if r["task"] == task
                            and r["variant"] == variant})
            files = [work / f"proba_{task}_s{s}_{variant}.npy" for s in seeds]
            if len(files) < 2 or not all(f.is_file() for f in files):
                continue
            if truth is None:
                data = load_task(task, "scaffold", 0, data_path)
                truth = data.labels[data.test]
            s = probability_scores(truth, np.mean([np.load(f) for f in files], 0))
            lines.append(f"| {task} | mean of {variant} over seeds {seeds} | {len(files)} | "
                         f"{100 * s.roc_auc:.1f} | {s.brier:.3f} | {s.ece:.3f} |")
    return lines


def _sd(v: np.ndarray) -> str:
    return f" ± {v.std(ddof=1):.3f}" if len(v) > 1 else ""


def conformal_table(rows: list[dict]) -> list[str]:
    """ESOL split-conformal intervals: coverage and width per split and alpha."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["split"], r["alpha"])].append(r)
    lines = ["| split | alpha | target coverage | coverage | mean width (log mol/L) | "
             "test RMSE | splits |", "|---|---:|---:|---:|---:|---:|---:|"]
    for (split, alpha), group in sorted(groups.items()):
        cov = np.array([r["coverage"] for r in group])
        width = np.array([r["width"] for r in group])
        lines.append(f"| {split} | {alpha} | {1 - alpha:.2f} | {cov.mean():.3f}{_sd(cov)} | "
                     f"{width.mean():.2f}{_sd(width)} | "
                     f"{np.mean([r['rmse'] for r in group]):.3f} | {len(group)} |")
    return lines


def diagram(probe_work: Path, ft_work: Path, tasks: list[str], png: Path, data_path,
            title: str) -> Path:
    panels = {}
    for task in tasks:
        data = load_task(task, "scaffold", 0, data_path)
        truth = data.labels[data.test][:, 0]
        curves = {}
        for name, path in (("probe", probe_work / f"proba_{task}_s0_probe.npy"),
                           ("probe+isotonic", probe_work / f"proba_{task}_s0_probe+isotonic.npy"),
                           ("probe ens5+tta4+isotonic",
                            probe_work / f"proba_{task}_s0_probe_ens5+tta4+isotonic.npy"),
                           ("fine-tune", ft_work / f"proba_{task}_s0_finetune.npy"),
                           ("fine-tune+isotonic",
                            ft_work / f"proba_{task}_s0_finetune+isotonic.npy")):
            if path.is_file():
                curves[name] = (truth, np.load(path)[:, 0])
        panels[f"{task.upper()} test, seed 0"] = curves
    return reliability_diagram(panels, png, title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--probe-work", type=Path, default=Path("runs/uncertainty_probe"))
    parser.add_argument("--ft-work", type=Path, default=Path("runs/uncertainty_finetune"))
    parser.add_argument("--tasks", nargs="+", default=["bace", "bbbp", "clintox", "sider"])
    parser.add_argument("--uq-tasks", nargs="+", default=["bbbp", "bace"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--png", type=Path, required=True)
    args = parser.parse_args()
    probe = _rows(args.results / "probe.jsonl")
    finetune = _rows(args.results / "finetune.jsonl")
    esol = _rows(args.results / "esol_conformal.jsonl")
    stamps = sorted({(r["commit"], r["machine"]) for r in probe + finetune + esol})
    lines = ["# Uncertainty and SMILES augmentation on CPU (commands, budget: README.md)", "",
             "## Augmentation: test ROC-AUC (%), mean ± std over seeds", "",
             "Probe (frozen exlm-small BOS embedding + logistic regression):", "",
             *augmentation_table(probe, ["probe", "probe (canonical test SMILES)",
                                         "probe+aug1", "probe+tta4", "probe+aug1+tta4"],
                                 args.tasks), "",
             "Fine-tune (budget below):", "",
             *augmentation_table(finetune, ["finetune", "finetune+aug1", "finetune+tta4",
                                            "finetune+aug1+tta4"],
                                 [t for t in args.tasks if any(r["task"] == t
                                                               for r in finetune)]), "",
             "## Uncertainty methods side by side (test split)", "",
             *side_by_side([r for r in probe if r["task"] in args.uq_tasks], args.uq_tasks), "",
             *side_by_side(finetune, [t for t in args.uq_tasks
                                      if any(r["task"] == t for r in finetune)]), "",
             "## Ensembles of the fine-tuned seed models", "",
             *seed_ensembles(finetune, args.ft_work, args.uq_tasks, args.data), "",
             "## Split-conformal intervals, ESOL (probe ridge regression)", "",
             *conformal_table(esol), "",
             "Records: " + "; ".join(f"commit {c}, machine {m}" for c, m in stamps), ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    diagram(args.probe_work, args.ft_work, args.uq_tasks, args.png, args.data,
            "exlm-small, scaffold split; 10 equal-width bins")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
