"""Test coverage of the default regressor's own intervals (``predict_interval``), on CPU.

``ExLMMoleculeRegressor()`` at its defaults is fitted on the train + valid rows of a
MoleculeNet regression set, as the benchmark runner's ``exlm_defaults`` row is; its
conformity scores come from the share it holds out itself (whole scaffolds), the same
molecules that chose the network's best epoch and its head's best step. The intervals are
scored on the test rows: the fraction of test labels inside ``predict ± q`` and the mean
width, per alpha. On a ``random`` split the test rows are exchangeable with the training
molecules, so coverage under ``1 - alpha`` there is the cost of scoring on rows that also
chose; on a ``scaffold`` split the test scaffolds are new, as the held-out share's are.

Usage::

    python benchmarks/uncertainty/interval_coverage.py --out FILE.jsonl \
        [--tasks esol freesolv] [--splits random scaffold] [--seeds 0 1 2]

Rows already in ``--out`` (task, split, seed) are skipped, so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from exlm_chem.provenance import git_commit, load_average, machine

ALPHAS = (0.1, 0.2)


def cell(task: str, split: str, seed: int, model: str | None) -> list[dict]:
    """One fit of the default regressor; one record per alpha."""
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles
    from exlm_chem.sklearn.estimator import ExLMMoleculeRegressor
    from exlm_chem.uncertainty.scores import interval_coverage, interval_width

    data = with_canonical_smiles(load_task(task, "scaffold", seed))
    if split == "random":  # 80/10/10 of a seeded permutation
        order = np.random.default_rng(seed).permutation(len(data.smiles))
        n_fit = len(order) - len(data.test)
        data = data._replace(train=order[:n_fit], valid=order[:0], test=order[n_fit:])
    rows = np.concatenate([data.train, data.valid])
    kwargs = {} if model is None else {"pretrained": model}
    est = ExLMMoleculeRegressor(random_state=seed, **kwargs)
    started = time.process_time()
    est.fit([data.smiles[i] for i in rows], data.labels[rows])
    test_smiles = [data.smiles[i] for i in data.test]
    y = data.labels[data.test]  # [n_test, T]
    out = []
    for alpha in ALPHAS:
        interval = est.predict_interval(test_smiles, alpha=alpha)
        lower, upper = (np.asarray(b, dtype=np.float64).reshape(y.shape)
                        for b in (interval.lower, interval.upper))
        out.append({"task": task, "split": split, "seed": seed, "alpha": alpha,
                    "coverage": interval_coverage(y, lower, upper).mean,
                    "width": interval_width(y, lower, upper).mean,
                    "n_conformity": len(est.conformity_scores_[0]),
                    "n_test": len(data.test), "best_epoch": int(est.best_epoch_)})
    cpu_s = round(time.process_time() - started, 1)
    return [{**r, "cpu_s": cpu_s} for r in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["esol", "freesolv"])
    parser.add_argument("--splits", nargs="+", default=["random", "scaffold"],
                        choices=["random", "scaffold"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--model", default=None,
                        help="checkpoint directory (default: the estimator's own, "
                             "$EXLM_CHEM_MODEL or the shipped one)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    done = set()
    if args.out.is_file():
        done = {(r["task"], r["split"], r["seed"])
                for r in map(json.loads, args.out.read_text().splitlines())}
    stamp = {"commit": git_commit(), "machine": machine(), "model": args.model or "default",
             "method": "ExLMMoleculeRegressor() on train + valid, predict_interval on test"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for task in args.tasks:
        for split in args.splits:
            for seed in args.seeds:
                if (task, split, seed) in done:
                    continue
                records = cell(task, split, seed, args.model)
                with args.out.open("a") as handle:
                    for r in records:
                        handle.write(json.dumps({**r, **stamp,
                                                 "load_average": load_average()}) + "\n")
                print(f"{task} {split} seed {seed}: " + ", ".join(
                    f"alpha {r['alpha']}: coverage {r['coverage']:.3f} width {r['width']:.3f}"
                    for r in records) + f" ({records[0]['cpu_s']} CPU-s)", flush=True)


if __name__ == "__main__":
    main()
