"""ExLMMoleculeClassifier's defaults against its previous defaults and the paper's Table 8
preset, scaffold split.

``default``: the estimator as it ships. ``0.2.0``: the 0.2.0 defaults (the same recipe
without the random forest in the tree head). ``previous``: the 0.1.0 defaults, before the
tree head and head-first fine-tuning (30 epochs, patience 5, the network alone).
``table8``: the paper's per-task fine-tuning preset (every epoch, ``patience=None``). Each
configuration fits the estimator on the scaffold split's train + valid molecules (the
estimator holds out its own ``validation_fraction`` to pick the best epoch) and is scored
by ROC-AUC on the scaffold test molecules. Per fit: wall time, process CPU time (all
threads), epochs run, the best epoch. One JSON line per fit is appended to ``--rows`` (a
rerun skips fits already there), and the table is written to ``--out``.

    python benchmarks/moleculenet/laptop_defaults.py --tasks bbbp bace --seeds 0 1 2 \\
        --configs default 0.2.0 --threads 2 --rows runs/laptop.jsonl --out table.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from exlm_chem.provenance import git_commit, load_average, machine

# the previous defaults' recipe: the network alone, fine-tuned from a random head
NETWORK_ALONE = {"tree_head": False, "head_first": False, "train_layers": None}
PREVIOUS = {"epochs": 30, "patience": 5, **NETWORK_ALONE}
CONFIGS = {"default": {}, "0.2.0": {"tree_forest": False}, "previous": PREVIOUS}


def fit_once(task: str, seed: int, config: str, data_dir: str | None,
             max_minutes: float | None = None) -> dict:
    from exlm_chem import ExLMMoleculeClassifier
    from exlm_chem.benchmark.tasks import load_task
    from exlm_chem.metrics import mean_roc_auc
    from exlm_chem.presets import finetune_preset

    data = load_task(task, "scaffold", seed, data_dir)
    if config == "table8":
        params = {**dataclasses.asdict(finetune_preset(task)), "patience": None, **NETWORK_ALONE}
    else:
        params = dict(CONFIGS[config])
    if max_minutes is not None:  # a cap for this measurement, recorded with the row
        params["max_minutes"] = max_minutes
    clf = ExLMMoleculeClassifier(random_state=seed, **params)
    train = np.concatenate([data.train, data.valid])  # the estimator holds out its own
    labels = data.labels[train]
    y = labels[:, 0] if labels.shape[1] == 1 else labels
    wall, cpu = time.monotonic(), time.process_time()
    clf.fit([data.smiles[i] for i in train], y)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    scores = clf.decision_function([data.smiles[i] for i in data.test])
    scores = scores[:, None] if scores.ndim == 1 else scores
    auc = mean_roc_auc(data.labels[data.test], scores)
    return {"task": task, "seed": seed, "config": config, "roc_auc": float(auc.mean),
            "wall_s": wall, "cpu_s": cpu, "epochs_run": len(clf.history_),
            "best_epoch": clf.best_epoch_, "stopped_early": bool(clf.stopped_early_),
            # per epoch: validation score and seconds, to see what a lower cap would cost
            "valid_scores": [round(float(r.valid_score), 4) for r in clf.history_],
            "epoch_seconds": [round(float(r.seconds), 1) for r in clf.history_],
            "params": {k: v for k, v in clf.get_params().items()
                       if k in ("epochs", "batch_size", "lr", "patience", "max_minutes",
                                "tree_head", "tree_forest", "head_first",
                                "train_layers")}}


def table(rows: list[dict]) -> str:
    lines = ["| task | config | seeds | ROC-AUC mean ± std | epochs run | wall min/fit | "
             "CPU min/fit |", "|---|---|---:|---:|---:|---:|---:|"]
    keys = sorted({(r["task"], r["config"]) for r in rows})
    for task, config in keys:
        group = [r for r in rows if (r["task"], r["config"]) == (task, config)]
        auc = np.array([r["roc_auc"] for r in group])
        lines.append(
            f"| {task} | {config} | {','.join(str(r['seed']) for r in group)} | "
            f"{auc.mean():.3f} ± {auc.std():.3f} | "
            f"{np.mean([r['epochs_run'] for r in group]):.1f} | "
            f"{np.mean([r['wall_s'] for r in group]) / 60:.1f} | "
            f"{np.mean([r['cpu_s'] for r in group]) / 60:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["bbbp", "bace"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--configs", nargs="+", default=["default", "0.2.0"],
                        choices=[*CONFIGS, "table8"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", default=None)
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="cap every fit (stopped_early says it bit)")
    parser.add_argument("--rows", required=True, help="JSON lines, one per fit (resumes)")
    parser.add_argument("--out", required=True, help="markdown table")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    rows_path = Path(args.rows)
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()] \
        if rows_path.is_file() else []
    done = {(r["task"], r["seed"], r["config"]) for r in rows}
    for task in args.tasks:
        for seed in args.seeds:
            for config in args.configs:
                if (task, seed, config) in done:
                    continue
                row = {**fit_once(task, seed, config, args.data, args.max_minutes),
                       "threads": args.threads, "commit": git_commit(), "machine": machine(),
                       "load_average": load_average()}
                rows.append(row)
                with rows_path.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
    command = "python benchmarks/moleculenet/laptop_defaults.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(args).items() if v is not None)
    Path(args.out).write_text(f"Command: `{command}`\n\n{table(rows)}\n")


if __name__ == "__main__":
    main()
