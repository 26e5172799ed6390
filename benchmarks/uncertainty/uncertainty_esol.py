"""Split-conformal intervals on ESOL with the frozen encoder (probe regression), on CPU.

The exlm-small BOS embedding of every ESOL molecule, a ridge regression (alpha chosen by
leave-one-out on the training rows) fitted on the training split, conformity scores
(absolute residuals) on the validation split, intervals on the test split for several
alpha: coverage and mean width. Once on the deterministic scaffold split (test molecules
have unseen scaffolds: not exchangeable with the validation rows), and over ``--repeats``
random 80/10/10 splits (exchangeable: the guarantee applies).

Usage: ``python benchmarks/uncertainty/uncertainty_esol.py --out FILE.jsonl``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from exlm_chem.provenance import git_commit, machine
from exlm_chem.uncertainty.conformal import conformal_quantile, conformity_scores
from exlm_chem.uncertainty.scores import interval_coverage, interval_width

ALPHAS = (0.05, 0.1, 0.2)


def intervals(x: np.ndarray, y: np.ndarray, train, valid, test) -> list[dict]:
    from sklearn.linear_model import RidgeCV
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x[train])
    model = RidgeCV(alphas=np.logspace(-2, 4, 13)).fit(scaler.transform(x[train]), y[train])
    pred = {p: model.predict(scaler.transform(x[rows])) for p, rows in
            (("valid", valid), ("test", test))}
    scores = conformity_scores(y[valid][:, None], pred["valid"][:, None])[0]
    out = []
    for alpha in ALPHAS:
        q = conformal_quantile(scores, alpha)
        lo, hi = pred["test"] - q, pred["test"] + q
        out.append({"alpha": alpha, "coverage": interval_coverage(y[test], lo, hi).mean,
                    "width": interval_width(y[test], lo, hi).mean,
                    "rmse": float(np.sqrt(np.mean((pred["test"] - y[test]) ** 2))),
                    "n_valid": len(valid), "n_test": len(test)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", default="/work/shared/data/regression/esol.csv.gz")
    parser.add_argument("--model", default="models/exlm-small")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("runs/uncertainty_probe/esol.npy"))
    args = parser.parse_args()
    import torch

    from exlm_chem.data.splits import scaffold_split
    from exlm_chem.embedding import embed

    torch.set_num_threads(1)
    frame = pd.read_csv(args.csv)
    smiles = [s.strip() for s in frame["smiles"]]
    y = frame["measured log solubility in mols per litre"].to_numpy(np.float64)
    if args.cache.is_file():
        x = np.load(args.cache)
    else:
        x, valid = embed(smiles, model=args.model, pooling="bos", max_length=256)
        if not valid.all():
            raise ValueError(f"rows {np.flatnonzero(~valid)[:5]} not embedded")
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(args.cache, x)
    stamp = {"commit": git_commit(), "machine": machine(), "model": args.model,
             "task": "esol", "method": "probe ridge + split conformal"}
    rows = []
    split = scaffold_split(smiles)
    rows += [{**r, "split": "scaffold", "repeat": 0}
             for r in intervals(x, y, split.train, split.valid, split.test)]
    n = len(smiles)
    for repeat in range(args.repeats):
        order = np.random.default_rng(repeat).permutation(n)
        a, b = int(0.8 * n), int(0.9 * n)
        rows += [{**r, "split": "random", "repeat": repeat}
                 for r in intervals(x, y, order[:a], order[a:b], order[b:])]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for r in rows:
            handle.write(json.dumps({**r, **stamp}) + "\n")
    table = pd.DataFrame(rows).groupby(["split", "alpha"])[["coverage", "width", "rmse"]]
    print(table.agg(["mean", "std", "count"]).round(3).to_string())


if __name__ == "__main__":
    main()
