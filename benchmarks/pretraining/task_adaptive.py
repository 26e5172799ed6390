"""Task-adaptive pre-training (TAPT): the pre-training objective over a task's own molecules.

A lever study for ``ExLMMoleculeClassifier``'s defaults (issue 48). Sultan et al. 2025
(arXiv 2503.03360) continue descriptor regression over at most a few thousand in-domain
molecules before fine-tuning. Here the shipped encoder is pre-trained a little further, with
its own objective (ExLM states alignment + RDKit 2D descriptor regression), over the
molecules the estimator is fitted on -- the training and validation parts of the paper's
scaffold split, never the test part -- and the default classifier is then fitted from the
adapted encoder by the benchmark runner, cell for cell against the shipped encoder.

This script writes those molecules; the rest is the package's own commands::

    python benchmarks/pretraining/task_adaptive.py export bbbp tapt/bbbp.smi
    exlm-chem corpus prepare --corpus tapt/bbbp.smi --no-hygiene --valid-size 100 \\
        --descriptors rdkit2d --out tapt/bbbp_corpus
    exlm-chem pretrain --prepared tapt/bbbp_corpus --init-from models/exlm-small \\
        --preset small --aux-weight 1 --mask-ratio 0.3 --dropout 0.0 --max-tokens 2048 \\
        --lr 1e-4 --warmup-steps 10 --max-steps 100 --decay-steps 90 --device cpu \\
        --no-progress --out tapt/bbbp_run
    exlm-chem benchmark --tasks bbbp --seeds 0 1 2 --methods exlm_defaults \\
        --model tapt/bbbp_run/checkpoint --out tapt/bbbp_bench

``--no-hygiene`` is needed because the corpus *is* benchmark molecules: hygiene would drop
those that another split mode puts in a valid or test part. The scaffold split of the paper
does not depend on the seed, so one adapted encoder serves every seed of a task.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def fit_smiles(task: str, seed: int = 0) -> list[str]:
    """Canonical SMILES of the rows the runner fits on (train + valid parts), in row order."""
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles

    data = with_canonical_smiles(load_task(task, "scaffold", seed))
    rows = sorted([*data.train, *data.valid])
    return [data.smiles[i] for i in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="write a task's fit molecules, one SMILES a line")
    export.add_argument("task")
    export.add_argument("out", type=Path)
    export.add_argument("--seed", type=int, default=0, help="split seed (the paper's "
                        "scaffold split ignores it)")
    args = parser.parse_args(argv)
    smiles = fit_smiles(args.task, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(s + "\n" for s in smiles), encoding="utf-8")
    print(f"{args.out}: {len(smiles)} molecules (train + valid of {args.task}'s scaffold split)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
