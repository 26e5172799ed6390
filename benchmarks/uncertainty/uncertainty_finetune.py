"""SMILES augmentation in fine-tuning, and post-hoc tta / calibration, on CPU.

Per task (scaffold split), seed and ``--augment`` value (0 and n): the paper's Table 8
settings for the task with epochs capped at ``--epochs`` and training capped at
``--minutes`` (the budget; the schedule is fitted to the capped epochs), best validation
epoch restored. The test split is scored as given; on ``--uq-tasks`` also averaged over the
canonical + ``--tta`` randomized SMILES, and calibrated (isotonic / Platt, fitted on
the validation split's probabilities). Rows go to ``--out``/finetune.jsonl (resumable);
test probabilities to ``--work`` (the report averages the seeds' models into an ensemble).

Usage: ``python benchmarks/uncertainty/uncertainty_finetune.py --out DIR [--tasks ...]
[--seeds ...]``
"""

from __future__ import annotations

import dataclasses
import json
import time

import _uncertainty_cli
import numpy as np
from scipy.special import expit

from exlm_chem.benchmark.encoders import cell_finetune_settings
from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import load_task
from exlm_chem.data.augment import tta_views
from exlm_chem.provenance import git_commit, machine
from exlm_chem.uncertainty.calibration import fit_calibrator
from exlm_chem.uncertainty.scores import probability_scores


def proba(net, smiles: list[str], tta: int, seed: int) -> np.ndarray:
    """Probabilities [n, T] on the given SMILES (tta 0) or averaged over tta views."""
    from exlm_chem.model.molecule_model import PREDICT

    views = tta_views(smiles, tta, seed) if tta else [smiles]
    return np.mean([expit(net.run(v, PREDICT, 64).astype(np.float64)) for v in views], 0)


def run_cell(task: str, seed: int, augment: int, args, data) -> tuple[dict, dict]:
    import torch

    from exlm_chem.model.molecule_model import build_model
    from exlm_chem.model.pretrained import load_backbone
    from exlm_chem.train.finetune import LabelledSmiles, finetune

    settings = cell_finetune_settings(task, Budget(max_epochs=args.epochs))

    def part(rows: np.ndarray) -> LabelledSmiles:
        return LabelledSmiles([data.smiles[i] for i in rows], data.labels[rows])

    started = time.monotonic()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        backbone = load_backbone(args.model, preset="", dropout=settings.dropout)
        net = build_model(backbone.config, backbone.tokenizer, data.labels.shape[1],
                          backbone.encoder_state, settings.pooler_dropout, "bos", 256)
        result = finetune(net, part(data.train), settings, valid=part(data.valid),
                          max_minutes=args.minutes, seed=seed, augment=augment)
    trained = time.monotonic() - started
    test = [data.smiles[i] for i in data.test]
    variants = {"finetune": proba(net, test, 0, seed)}
    if task in args.uq_tasks:
        valid = [data.smiles[i] for i in data.valid]
        y_valid = data.labels[data.valid]
        valid_p = proba(net, valid, 0, seed)
        variants[f"finetune+tta{args.tta}"] = proba(net, test, args.tta, seed)
        for method in ("isotonic", "platt"):
            variants[f"finetune+{method}"] = fit_calibrator(method, y_valid, valid_p).apply(
                variants["finetune"])
    facts = {"epochs_run": len(result.history), "best_epoch": result.best_epoch,
             "steps": result.n_steps, "stopped_early": result.stopped_early,
             "train_s": round(trained, 1), "cell_s": round(time.monotonic() - started, 1),
             "settings": dataclasses.asdict(settings), "max_minutes": args.minutes}
    return variants, facts


def main() -> None:
    parser = _uncertainty_cli.parser(__doc__, augment=1, work="runs/uncertainty_finetune")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=None)
    args = parser.parse_args()
    results, done = _uncertainty_cli.prepare(args, "finetune.jsonl", ("task", "seed", "augment"))
    stamp = {"commit": git_commit(), "machine": machine(), "model": args.model,
             "split": "scaffold", "part": "finetune"}
    for task in args.tasks:
        data = load_task(task, "scaffold", 0, args.data)
        for seed in args.seeds:
            for augment in (0, args.augment):
                if (task, seed, augment) in done:
                    continue
                variants, facts = run_cell(task, seed, augment, args, data)
                for name, p in variants.items():
                    name = name if not augment else name.replace(
                        "finetune", f"finetune+aug{augment}", 1)
                    np.save(args.work / f"proba_{task}_s{seed}_{name}.npy", p)
                    s = probability_scores(data.labels[data.test], p)
                    row = {**stamp, "task": task, "seed": seed, "augment": augment,
                           "variant": name, "roc_auc": s.roc_auc, "brier": s.brier,
                           "ece": s.ece, "n_train": len(data.train), **facts}
                    with results.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(row) + "\n")
                    print(f"{task} s{seed} {name}: ROC-AUC {s.roc_auc:.4f} Brier "
                          f"{s.brier:.4f} ECE {s.ece:.4f} ({facts['steps']} steps, "
                          f"{facts['cell_s']} s)", flush=True)


if __name__ == "__main__":
    main()
