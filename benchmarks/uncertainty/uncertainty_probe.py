"""SMILES augmentation and uncertainty methods with the frozen encoder (probe), on CPU.

Per task (scaffold split) and seed: the probe (standardised BOS embedding + one logistic
regression per task) trained on the given SMILES or on them plus ``--augment`` randomized
SMILES per training molecule, and scored on the test molecules as given or averaged over
the canonical + ``--tta`` randomized SMILES (probabilities averaged). On ``--uq-tasks``
also: isotonic / Platt calibration fitted on the validation split, and a bootstrap
ensemble of ``--members`` probes. Each row of ``--out`` (JSON lines, resumable) is one
(task, seed, variant) with ROC-AUC, Brier score and ECE on the test split; test
probabilities go to ``--work`` for the reliability diagram.

Usage: ``python benchmarks/uncertainty/uncertainty_probe.py --out DIR [--tasks ...] [--seeds ...]``
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import _uncertainty_cli
import numpy as np

from exlm_chem.benchmark.tasks import load_task
from exlm_chem.data.augment import EpochViews, tta_views
from exlm_chem.provenance import git_commit, machine
from exlm_chem.uncertainty.calibration import fit_calibrator
from exlm_chem.uncertainty.ensemble import bootstrap_rows, member_seeds
from exlm_chem.uncertainty.scores import probability_scores


class Embeddings:
    """BOS embeddings of SMILES strings, cached on disk per (task, name)."""

    def __init__(self, model: str, work: Path) -> None:
        from exlm_chem.model.molecule_model import MoleculeModel

        self.embedder = MoleculeModel.from_checkpoint(model, device="cpu")
        self.work = work

    def __call__(self, task: str, name: str, smiles: list[str]) -> np.ndarray:
        from exlm_chem.embedding import embed

        path = self.work / f"{task}_{name}.npy"
        if path.is_file():
            return np.load(path)
        vectors, valid = embed(smiles, model=self.embedder, pooling="bos", max_length=256)
        if not valid.all():
            raise ValueError(f"{task} {name}: rows {np.flatnonzero(~valid)[:5]} not embedded")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
        return vectors


def fit_probes(x: np.ndarray, y: np.ndarray, seed: int):
    """(scaler, one logistic regression per task or None) on features [n, d], labels [n, T]."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    xs, models = scaler.transform(x), []
    for t in range(y.shape[1]):
        rows = ~np.isnan(y[:, t])
        ok = np.unique(y[rows, t]).size == 2
        models.append(LogisticRegression(C=1.0, max_iter=2000, random_state=seed).fit(
            xs[rows], y[rows, t].astype(int)) if ok else None)
    return scaler, models


def probe_proba(probes, views: list[np.ndarray]) -> np.ndarray:
    """Probabilities [n, T] averaged over views (each [n, d]); NaN for unfitted tasks."""
    scaler, models = probes
    out = np.zeros((len(views[0]), len(models)))
    for x in views:
        xs = scaler.transform(x)
        out += np.column_stack([m.predict_proba(xs)[:, 1] if m is not None
                                else np.full(len(x), np.nan) for m in models])
    return out / len(views)


def run_task(task: str, seeds: list[int], args, emb: Embeddings, done: set, write) -> None:
    data = load_task(task, "scaffold", 0, args.data)
    smiles = data.smiles
    given = emb(task, "given", smiles)
    y_train, y_valid, y_test = (data.labels[r] for r in (data.train, data.valid, data.test))
    tr_smiles = [smiles[i] for i in data.train]
    for seed in seeds:
        started = time.monotonic()
        views = EpochViews(tr_smiles, args.augment, seed).epoch(0)  # given + randomized
        aug = emb(task, f"aug{args.augment}_s{seed}", views.smiles[len(tr_smiles):])
        x_aug = np.concatenate([given[data.train], aug])  # [(1 + A) n_train, d]
        y_aug = data.labels[data.train][views.rows]
        tta = {}
        for part in ("valid", "test") if task in args.uq_tasks else ("test",):
            rows = getattr(data, part)  # valid views: only the ensemble's calibration uses them
            v = tta_views([smiles[i] for i in rows], args.tta, seed)
            tta[part] = [emb(task, f"{part}_tta{args.tta}_s{seed}_v{k}", s)
                         for k, s in enumerate(v)]
        base, augmented = fit_probes(given[data.train], y_train, seed), fit_probes(
            x_aug, y_aug, seed)
        test_given = [given[data.test]]
        variants = {
            "probe": probe_proba(base, test_given),
            # canonical test SMILES alone: separates canonicalisation from averaging views
            "probe (canonical test SMILES)": probe_proba(base, tta["test"][:1]),
            f"probe+tta{args.tta}": probe_proba(base, tta["test"]),
            f"probe+aug{args.augment}": probe_proba(augmented, test_given),
            f"probe+aug{args.augment}+tta{args.tta}": probe_proba(augmented, tta["test"]),
        }
        if task in args.uq_tasks:
            valid_p = probe_proba(base, [given[data.valid]])
            for method in ("isotonic", "platt"):
                cal = fit_calibrator(method, y_valid, valid_p)
                variants[f"probe+{method}"] = cal.apply(variants["probe"])
            members = [fit_probes(given[data.train][r], y_train[r], s) for s in
                       member_seeds(seed, args.members)
                       for r in [bootstrap_rows(len(data.train), s)]]
            ens = f"probe ens{args.members}"
            variants[ens] = np.mean([probe_proba(m, test_given) for m in members], 0)
            ens_tta = np.mean([probe_proba(m, tta["test"]) for m in members], 0)
            ens_valid = np.mean([probe_proba(m, tta["valid"]) for m in members], 0)
            cal = fit_calibrator("isotonic", y_valid, ens_valid)
            variants[f"{ens}+tta{args.tta}+isotonic"] = cal.apply(ens_tta)
        wall = time.monotonic() - started
        for name, proba in variants.items():
            if (task, seed, name) in done:
                continue
            np.save(args.work / f"proba_{task}_s{seed}_{name.replace(' ', '_')}.npy", proba)
            fitted = ~np.isnan(proba).all(0)
            s = probability_scores(y_test[:, fitted], proba[:, fitted])
            write({"part": "probe", "task": task, "seed": seed, "variant": name,
                   "roc_auc": s.roc_auc, "brier": s.brier, "ece": s.ece,
                   "n_train": len(data.train), "n_test": len(data.test),
                   "augment": args.augment, "tta": args.tta, "wall_s_seed": round(wall, 1)})


def main() -> None:
    parser = _uncertainty_cli.parser(__doc__, augment=2, work="runs/uncertainty_probe")
    parser.add_argument("--members", type=int, default=5)
    args = parser.parse_args()
    results, done = _uncertainty_cli.prepare(args, "probe.jsonl", ("task", "seed", "variant"))
    stamp = {"commit": git_commit(), "machine": machine(), "model": args.model,
             "split": "scaffold"}

    def write(row: dict) -> None:
        with results.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**row, **stamp}) + "\n")
        print(f"{row['task']} s{row['seed']} {row['variant']}: ROC-AUC {row['roc_auc']:.4f} "
              f"Brier {row['brier']:.4f} ECE {row['ece']:.4f}", flush=True)

    emb = Embeddings(args.model, args.work)
    for task in args.tasks:
        run_task(task, args.seeds, args, emb, done, write)


if __name__ == "__main__":
    main()
