"""Tree heads on frozen features: what a gradient-boosted head reads from the encoder.

A lever study for the estimator's defaults. Per MoleculeNet task on the paper's scaffold
split, three feature blocks are computed once: the encoder's pooled states (the package's
default pooling and layer, via :func:`exlm_chem.embed`), Morgan radius-2 counts and RDKit 2D
descriptors (the benchmark runner's cached task features). Heads, one model per sub-task,
fitted on the training rows and scored on the test rows (ROC-AUC x100, mean over the
task's sub-tasks, as the runner scores a cell):

- ``lr(emb)``: logistic regression on the standardised states (the runner's probe row);
- ``gbt(fp+desc)``: scikit-learn's histogram gradient boosting at its defaults on Morgan
  counts + RDKit 2D (the runner's ``gbt`` row);
- ``gbt(emb)``: the same boosting on the states alone;
- ``gbt(emb+fp+desc)``: on all three blocks side by side;
- ``gbt(emb+desc)``: on the states and the descriptors (the estimators' tree head);
- ``avg(lr(emb), gbt(fp+desc))``: the two heads' probabilities averaged;
- ``gbt(desc)``: on the descriptors alone, so ``gbt(emb+desc) - gbt(desc)`` is what the
  encoder adds to the tree head beyond cheap features: a probe for pre-training arms that
  judges an encoder the way the shipped estimator reads it.

``--heads`` runs a subset. ``--random-init SEED`` reads random weights in the shape of
``--model`` instead (the pre-training study's control). ``--cache`` keeps the descriptor
blocks in a folder several ``--out`` folders share, so each model's run computes them once.

The scaffold split is deterministic and so are these heads below 10,000 training rows
(boosting early-stops, with a random validation share, only above that), so one seed
scores them. Each (task, head) is one line of ``OUT/results.jsonl`` with its fit's wall
and CPU seconds; a rerun skips what is there. ``--report`` prints the table.

Usage::

    python benchmarks/moleculenet/tree_head.py --tasks bace bbbp clintox sider tox21 --out DIR
    python benchmarks/moleculenet/tree_head.py --out DIR --report
    # what each encoder adds to the tree head beyond the descriptors
    python benchmarks/moleculenet/tree_head.py --model CHECKPOINT \
        --heads "gbt(desc)" "gbt(emb+desc)" --cache DIR/features --out DIR/ARM
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]  # benchmarks/<group>/NAME.py
HEADS = ("lr(emb)", "gbt(fp+desc)", "gbt(emb)", "gbt(emb+fp+desc)", "gbt(emb+desc)",
         "avg(lr(emb), gbt(fp+desc))", "gbt(desc)")


def _per_task(x: np.ndarray, data, make: Callable[[int], object]) -> np.ndarray:
    """Test probabilities [len(test), T]; NaN for a sub-task with one training class."""
    scores = np.full((len(data.test), data.labels.shape[1]), np.nan)
    for t in range(data.labels.shape[1]):
        y = data.labels[data.train, t]
        labelled = ~np.isnan(y)
        if np.unique(y[labelled]).size < 2:
            continue
        model = make(t)
        model.fit(x[data.train][labelled], y[labelled].astype(int))
        scores[:, t] = model.predict_proba(x[data.test])[:, 1]
    return scores


def _gbt(t: int) -> object:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=1000 * t)


def _features(data, model: str, out: Path, cache: Path,
              with_fp: bool = True) -> dict[str, np.ndarray | None]:
    from exlm_chem import embed
    from exlm_chem.benchmark.features import scaled_task_features

    path = out / f"{data.name}_emb.npy"
    if path.is_file():
        emb = np.load(path)
    else:
        emb, valid = embed(data.smiles, model=model, device="cpu")
        if not valid.all():
            raise ValueError(f"{data.name}: {int((~valid).sum())} molecules were not embedded")
        np.save(path, emb)
    descriptors = scaled_task_features(data, ["rdkit2d"], cache)
    # the Morgan block is the slow one: computed only for the heads that read it
    tabular = scaled_task_features(data, ["morgan", "rdkit2d"], cache) if with_fp else None
    return {"emb": emb, "tab": tabular, "desc": descriptors}


def _heads(features: dict[str, np.ndarray], data) -> dict[str, Callable[[], np.ndarray]]:
    from exlm_chem.train.probe import probe_scores

    emb, tab = features["emb"], features["tab"]
    lr = functools.cache(lambda: probe_scores(emb, data.labels, data.train, data.test))
    gbt_tab = functools.cache(lambda: _per_task(tab, data, _gbt))  # reused by the average
    return {
        "lr(emb)": lr,
        "gbt(fp+desc)": gbt_tab,
        "gbt(emb)": lambda: _per_task(emb, data, _gbt),
        "gbt(emb+fp+desc)": lambda: _per_task(np.concatenate([emb, tab], axis=1), data, _gbt),
        "gbt(emb+desc)": lambda: _per_task(np.concatenate([emb, features["desc"]], axis=1),
                                           data, _gbt),
        "avg(lr(emb), gbt(fp+desc))": lambda: (lr() + gbt_tab()) / 2,
        "gbt(desc)": lambda: _per_task(features["desc"], data, _gbt),
    }


def run(tasks: list[str], model: str, out: Path, heads: tuple[str, ...] = HEADS,
        cache: Path | None = None) -> None:
    from exlm_chem.benchmark.records import MethodOutput
    from exlm_chem.benchmark.scoring import score_cell
    from exlm_chem.benchmark.tasks import load_task
    from exlm_chem.provenance import git_commit, machine

    out.mkdir(parents=True, exist_ok=True)
    cache = out if cache is None else cache
    cache.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = set()
    if results.is_file():
        done = {(r["task"], r["head"]) for r in map(json.loads, results.read_text().splitlines())}
    for task in tasks:
        if all((task, h) in done for h in heads):
            continue
        data = load_task(task, "scaffold", 0)
        began = time.perf_counter()
        features = _features(data, model, out, cache, any("fp" in h for h in heads))
        print(f"{task}: features {time.perf_counter() - began:.0f} s", flush=True)
        for head, scores in _heads(features, data).items():
            if head not in heads or (task, head) in done:
                continue
            began, cpu = time.perf_counter(), time.process_time()
            roc, _, _ = score_cell(data, MethodOutput(scores()))
            record = {"task": task, "head": head, "roc_auc": roc,
                      "wall_s": round(time.perf_counter() - began, 2),
                      "cpu_s": round(time.process_time() - cpu, 2), "model": model,
                      "split": "scaffold", "commit": git_commit(), "machine": machine(),
                      "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            with open(results, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
            print(f"{task} {head}: {100 * roc:.1f} ({record['wall_s']:.0f} s)", flush=True)


def report(out: Path) -> str:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    cells = {(r["task"], r["head"]): r for r in records}
    tasks = list(dict.fromkeys(r["task"] for r in records))
    lines = ["| head | " + " | ".join(tasks) + " | mean |", "|---|" + "---:|" * (len(tasks) + 1)]
    for head in [h for h in HEADS if any(r["head"] == h for r in records)]:
        values = [cells[t, head]["roc_auc"] * 100 if (t, head) in cells else None for t in tasks]
        shown = [f"{v:.1f}" if v is not None else "–" for v in values]
        known = [v for v in values if v is not None]
        mean = f"{np.mean(known):.1f}" if len(known) == len(tasks) else "–"
        lines.append(f"| {head} | " + " | ".join(shown) + f" | {mean} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["bace", "bbbp", "clintox", "sider",
                                                       "tox21"])
    parser.add_argument("--model", default=str(REPO / "models" / "exlm-small"))
    parser.add_argument("--random-init", type=int, default=None, metavar="SEED",
                        help="random weights in the shape of --model, this seed")
    parser.add_argument("--heads", nargs="+", choices=HEADS, default=list(HEADS))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder for the descriptor blocks (default: --out)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="only print the table")
    args = parser.parse_args()
    if not args.report:
        import torch

        torch.set_num_threads(args.threads)
        model = args.model
        if args.random_init is not None:
            from pretrain_cpu_study import random_checkpoint

            args.out.mkdir(parents=True, exist_ok=True)
            model = str(random_checkpoint(Path(args.model), args.random_init, args.out)[0])
        run(args.tasks, model, args.out, tuple(args.heads), args.cache)
    print(report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
