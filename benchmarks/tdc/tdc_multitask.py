"""TDC ADMET, the network's multi-task lever: one network fitted on the nine smaller
classification tasks at once, against one network per task, on the held-out clusters and
on TDC's valid parts.

ADMET-AI fits one Chemprop network on many TDC endpoints at once; the default estimators
fit one network per endpoint. This study asks what the first buys the network member, in
and out of distribution (issue 96's lever "a network trained on many ADMET endpoints at
once"). For each split and seed:

- each of :data:`TASKS` is loaded as the benchmark loads it
  (:func:`~exlm_chem.benchmark.tdc.load_tdc_task`): ``--split cluster``, the
  out-of-distribution split (fitted on the rest, scored on the held-out clusters);
  ``--split scaffold``, TDC's per-seed scaffold re-split of train_val (fitted on train,
  scored on the held-out valid part);
- **no fit sees a molecule that any task scores**: a training row whose molecule
  (:func:`~exlm_chem.data.cross_source.molecule_key`, its parent's InChIKey skeleton) is
  in some task's scored part is dropped from every fit, the single-task ones too, so the
  two arms fit on the same molecules and differ only in the other tasks' labels. The
  CYP substrate sets share most of their molecules, so this costs them up to a fifth of
  their rows (``n_dropped`` in the records);
- ``single``: ``ExLMMoleculeClassifier(tree_head=False)`` (the default network member
  alone) per task; ``multi``: the same estimator on the union of the tasks' training
  molecules, one row per molecule (RDKit canonical SMILES), a 2-D ``y`` with NaN where a
  task has no label. Each task's scored part is predicted by both and scored with its
  leaderboard metric (:func:`~exlm_chem.benchmark.tdc.tdc_metric`).

Where a records folder of the benchmark has the same cells' parts (``--trees``: the
default estimators' ``parts/``, whose ``*_trees`` are the tree member on the same rows),
each network is also scored mixed with those trees at the estimators' weight, 0.75: the
lever as it would reach the estimators. Those trees were fitted on the task's rows before
the drop.

Each (split, seed, arm, task) is one line of ``OUT/results.jsonl`` (score, mixed score,
rows fitted, fit's wall and CPU seconds: a ``multi`` fit's time is on each of its tasks'
lines, ``fit_tasks`` says how many share it), with commit and machine; the scored part's
predictions go to ``OUT/predictions/SPLIT_seedS_ARM.npz``. A rerun skips what is there.
``--report`` prints, per split, each task's two networks, alone and mixed, and the mean
relative change of ``multi`` against ``single`` (positive: better).

Usage::

    python benchmarks/tdc/tdc_multitask.py --split cluster --seeds 1 --out DIR \
        --trees benchmarks/results/tdc_admet/ood/defaults-a \
        benchmarks/results/tdc_admet/ood/defaults-b
    python benchmarks/tdc/tdc_multitask.py --split scaffold --seeds 1 --out DIR \
        --trees benchmarks/results/tdc_admet/records/default-050-valid
    python benchmarks/tdc/tdc_multitask.py --out DIR --report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the nine smaller classification sets (tdc_admet_runs.sh's SMALL_CLS): one classifier
#: reads them all; the regression sets would need a second network of their own
TASKS = ("dili", "hia_hou", "herg", "bioavailability_ma", "cyp2d6_substrate_carbonmangels",
         "cyp2c9_substrate_carbonmangels", "cyp3a4_substrate_carbonmangels",
         "pgp_broccatelli", "bbb_martins")
SPLITS = ("cluster", "scaffold")
ARMS = ("single", "multi")
TREE_WEIGHT = 0.75  # the estimators' default share of the trees


def fit_and_scored(data: Any, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows a fit may read and the rows it is scored on: the cluster split fits on
    everything but the held-out clusters (its test part), the scaffold split on train
    alone (valid is held out; TDC's test part is never read)."""
    if split == "cluster":
        return np.concatenate([data.train, data.valid]), data.test
    return data.train, data.valid


def load_split(tasks: Sequence[str], split: str, seed: int,
               data_path: str | None = None) -> dict[str, Any]:
    """Each task's :class:`~exlm_chem.benchmark.tasks.TaskData` for ``split`` and ``seed``,
    its SMILES RDKit-canonical (the union's row key)."""
    from exlm_chem.benchmark.tasks import with_canonical_smiles
    from exlm_chem.benchmark.tdc import load_tdc_task

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return {t: with_canonical_smiles(load_tdc_task(t, seed, data_path,
                                                   cluster=split == "cluster"))
            for t in tasks}


def training_rows(datas: dict[str, Any], split: str
                  ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Per task its rows to fit on: its fit rows less every molecule that some task
    scores (compared by :func:`~exlm_chem.data.cross_source.molecule_key`), and how many
    that drops."""
    from exlm_chem.data.cross_source import molecule_key

    keys = {t: [molecule_key(s) for s in d.smiles] for t, d in datas.items()}
    scored = {keys[t][i] for t, d in datas.items() for i in fit_and_scored(d, split)[1]}
    rows, dropped = {}, {}
    for t, d in datas.items():
        fit = fit_and_scored(d, split)[0]
        rows[t] = np.array([i for i in fit if keys[t][i] not in scored], dtype=np.int64)
        dropped[t] = len(fit) - len(rows[t])
    return rows, dropped


def union(datas: dict[str, Any], rows: dict[str, np.ndarray]
          ) -> tuple[list[str], np.ndarray]:
    """The tasks' training molecules as one set: SMILES [M] (canonical, first seen first)
    and labels [M, T] (T = len(datas), NaN where a task has no label for a molecule)."""
    index: dict[str, int] = {}
    for t, d in datas.items():
        for i in rows[t]:
            index.setdefault(d.smiles[i], len(index))
    labels = np.full((len(index), len(datas)), np.nan)
    for j, (t, d) in enumerate(datas.items()):
        for i in rows[t]:
            labels[index[d.smiles[i]], j] = d.labels[i, 0]
    return list(index), labels


def _network(seed: int, model: str) -> Any:
    """The default estimators' network member alone."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    return ExLMMoleculeClassifier(model, random_state=seed, device="cpu", tree_head=False)


def _fit(est: Any, smiles: list[str], labels: np.ndarray) -> tuple[Any, float, float]:
    began, cpu = time.perf_counter(), time.process_time()
    est.fit(smiles, labels)
    return est, time.perf_counter() - began, time.process_time() - cpu


def _trees(folders: Sequence[Path], task: str, seed: int, split: str,
           labels: np.ndarray) -> np.ndarray | None:
    """The default estimators' tree member on the scored rows, from the first folder whose
    ``parts/`` has the cell (None where none has); its labels must be the scored rows'."""
    part = "test" if split == "cluster" else "valid"
    for folder in folders:
        path = folder / "parts" / f"{task}_seed{seed}.npz"
        if path.is_file():
            with np.load(path) as stored:
                kept, trees = stored[f"{part}_labels"][:, 0], stored[f"{part}_trees"][:, 0]
            if kept.shape != labels.shape or not np.array_equal(kept, labels):
                raise ValueError(f"{path}: its {part} labels are not this split's scored rows")
            return trees
    return None


def run(tasks: Sequence[str], split: str, seeds: Sequence[int], out: Path, model: str,
        trees: Sequence[Path] = (), data_path: str | None = None) -> list[dict[str, Any]]:
    """Fit and score both arms for each seed (see the module docstring); returns the
    records written."""
    from exlm_chem.benchmark.tdc import tdc_metric
    from exlm_chem.files.safe_write import atomic_path
    from exlm_chem.provenance import git_commit, machine
    from exlm_chem.sklearn.ensemble import mix

    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = set()
    if results.is_file():
        done = {(r["split"], r["seed"], r["arm"], r["task"])
                for r in map(json.loads, results.read_text().splitlines())}
    provenance = {"model": model, "commit": git_commit(), "machine": machine()}
    written = []
    for seed in seeds:
        todo = [a for a in ARMS if any((split, seed, a, t) not in done for t in tasks)]
        if not todo:
            continue
        datas = load_split(tasks, split, seed, data_path)
        rows, dropped = training_rows(datas, split)
        fitted: dict[str, tuple[Any, float, float, int]] = {}  # task or "*" -> fit
        for arm in todo:
            predictions = {}
            if arm == "multi":
                smiles, labels = union(datas, rows)
                print(f"{split} seed {seed} multi: {len(smiles)} molecules, {len(tasks)} tasks",
                      flush=True)
                fitted["*"] = (*_fit(_network(seed, model), smiles, labels), len(tasks))
            for j, (task, data) in enumerate(datas.items()):
                if (split, seed, arm, task) in done:
                    continue
                if arm == "single":
                    fit_smiles = [data.smiles[i] for i in rows[task]]
                    fitted[task] = (*_fit(_network(seed, model), fit_smiles,
                                          data.labels[rows[task]]), 1)
                est, wall, cpu, shared = fitted["*" if arm == "multi" else task]
                scored = fit_and_scored(data, split)[1]
                labels = data.labels[scored, 0]
                proba = est.predict_proba([data.smiles[i] for i in scored])  # [n, T]
                predicted = proba[:, j] if arm == "multi" else proba[:, 0]
                predictions[task] = predicted
                kept = _trees(trees, task, seed, split, labels)
                record = {"task": task, "split": split, "seed": seed, "arm": arm,
                          "metric": data.metric,
                          "score": tdc_metric(data.metric, labels, predicted),
                          "mixed_score": None if kept is None else tdc_metric(
                              data.metric, labels, mix(predicted, kept, TREE_WEIGHT,
                                                       "classification")),
                          "n_fit": len(rows[task]), "n_dropped": dropped[task],
                          "n_scored": len(scored), "fit_tasks": shared,
                          "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                          "data_sha256": data.data_sha256, **provenance,
                          "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                with open(results, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record) + "\n")
                written.append(record)
                print(f"{split} seed {seed} {arm} {task}: {record['score']:.3f} "
                      f"(mixed {record['mixed_score']}) {wall:.0f} s", flush=True)
            path = out / "predictions" / f"{split}_seed{seed}_{arm}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp, open(tmp, "wb") as handle:
                np.savez_compressed(handle, **predictions)
    return written


def report(out: Path) -> str:
    """Per split: each task's ``single`` and ``multi`` scores (alone, and mixed with the
    trees where the records have them; means over the seeds both arms have) and the mean
    relative change of ``multi`` against ``single`` with the tasks ahead / behind."""
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    lines = []
    for split in SPLITS:
        mine = [r for r in records if r["split"] == split]
        if not mine:
            continue
        cells: dict[tuple[str, str, str], dict[int, float]] = {}
        for r in mine:
            for how, key in (("alone", "score"), ("mixed", "mixed_score")):
                if r[key] is not None:
                    cells.setdefault((r["task"], r["arm"], how), {})[r["seed"]] = r[key]
        tasks = list(dict.fromkeys(r["task"] for r in mine))
        lines += [f"**{split}**", "", "| task | single | multi | single, mixed | multi, mixed |",
                  "|---|---:|---:|---:|---:|"]
        gains: dict[str, list[float]] = {"alone": [], "mixed": []}
        paired: set[int] = set()
        for task in tasks:
            shown = []
            for how in ("alone", "mixed"):
                one = cells.get((task, "single", how), {})
                many = cells.get((task, "multi", how), {})
                seeds = sorted(set(one) & set(many))
                if not seeds:
                    shown += ["–", "–"]
                    continue
                paired.update(seeds)
                a, b = (float(np.mean([d[s] for s in seeds])) for d in (one, many))
                gains[how].append((b - a) / abs(a))  # AUROC, AUPRC: higher is better
                shown += [f"{a:.3f}", f"{b:.3f}"]
            lines.append(f"| {task} | {shown[0]} | {shown[1]} | {shown[2]} | {shown[3]} |")
        for how, values in gains.items():
            if values:
                ahead = sum(g > 0 for g in values)
                behind = sum(g < 0 for g in values)
                lines.append(f"\nmulti against single, {how}: {100 * np.mean(values):+.2f} % "
                             f"on the mean, ahead on {ahead}, behind on {behind} of "
                             f"{len(values)} (seeds {', '.join(map(str, sorted(paired)))})")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="cluster")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="default",
                        help="the pre-trained checkpoint (default: the package's)")
    parser.add_argument("--trees", type=Path, nargs="*", default=[],
                        help="benchmark records folders whose parts/ hold the default "
                             "estimators' trees on the same scored rows")
    parser.add_argument("--data", default=None,
                        help="admet_group.zip or its folder (default: the loader's search)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="only print the table")
    args = parser.parse_args(argv)
    if not args.report:
        from exlm_chem.threads import set_threads

        set_threads(args.threads)
        run(args.tasks, args.split, args.seeds, args.out, args.model, args.trees, args.data)
    print(report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
