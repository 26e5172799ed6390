"""The classifier's tree weight: how the network and the tree head are best averaged.

A lever study for ``ExLMMoleculeClassifier``'s defaults of 0.4.0 (issue 48). That classifier
averaged the fine-tuned network's probabilities with its tree head's at ``tree_weight_`` =
one half; the regressor instead took the weight of
:data:`~exlm_chem.sklearn.ensemble.TREE_WEIGHTS` that fits its held-out molecules best. This
script asks whether the classifier should too (0.5.0's does, by held-out log loss).

Per MoleculeNet task (the paper's scaffold split) and seed it fits the classifier with its
defaults as the benchmark runner's ``exlm_defaults`` cell does (train + valid rows in, the
estimator holding out its own share), except for the tree head (:func:`head_params`), then
scores, for every weight in ``TREE_WEIGHTS``, the test rows (ROC-AUC x100, mean over
sub-tasks, as the runner scores a cell) and the estimator's own held-out molecules (ROC-AUC
and Brier score). The weight the held-out molecules would choose is thereby read off each
record, without a fit per weight. Weight 0.5 reproduced 0.4.0's runner cell; 0 is the
network alone, 1 the trees alone.

The tree head, the baseline of every record, is 0.4.0's head (``tree_booster="hist"``):
histogram boosting on the pre-trained pooled state and RDKit 2D
(:data:`~exlm_chem.model.frozen_trees.HIST_TREE_KINDS`), without the forest, set
explicitly since 0.5.0's defaults fit CatBoost on MapLight's features. ``tree_weight`` is
left None: beside histogram boosting the classifier then keeps the trees fitted on its
training rows, as 0.4.0's did (a fixed weight would refit them on every molecule, the
held-out ones too); the weight it chooses is read by no record, which scores every weight.

The held-out molecules are the estimators' rule (:func:`held_out_mask`): whole
Bemis-Murcko scaffolds since 0.5.0. The committed records (benchmarks/results/
tree_weight_cpu: the default head, ``tree_kinds`` and ``valid_part``) were made with 0.4.0's
rule, a random 10 % of the fit rows (:func:`random_held_out_mask`), so the networks and the
held-out scores of a rerun are not theirs.

``--tree-kinds`` also asks what the tree head should read beside the pooled state: each
variant (feature kinds joined by ``+``, e.g. ``rdkit2d+morgan``) refits the tree head on the
same rows, states and seed after the one fit of the network, and is scored the same way, so
variants differ only in their trees. Every variant's trees are refitted (the default one
too, which reproduces the fitted head: the trees are deterministic below 10,000 rows), so
their fit times compare. The test outputs of the network and of each variant's trees
(logits [n, T]) are kept in ``OUT/outputs/TASK_SEED.npz`` for later combinations, with the
fit's rows and the estimator's held-out mask over them, so other tree heads can be refitted
on the same rows without fitting the network again.

``--rescore-rf`` reads those kept outputs instead of fitting: per (task, seed) it fits the
benchmark runner's random forest on RDKit 2D (``rf_rdkit2d``, at its settings) on the rows
the estimator's trees trained on, and scores the network averaged with the trees, with the
forest, and with both (``OUT/rescored.jsonl``), so a forest as a further member of the
average is measured against the same networks without fitting them again.

``--part valid`` asks the same questions without reading the test part: the classifier is
fitted on the training part alone and the split's validation part is scored in the test
part's place (kept outputs and ``--rescore-rf`` follow; use a separate OUT).

Each (task, seed, tree kinds) is one line of ``OUT/results.jsonl`` with the fit's wall and
CPU seconds and the trees' own; a rerun skips what is there. ``--report`` prints the table,
one block per tree-kinds variant.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/moleculenet/tree_weight.py \
        --tasks bbbp bace clintox sider --seeds 0 1 2 --threads 1 --out DIR
    python benchmarks/moleculenet/tree_weight.py --out DIR --report
    # the tree head on the pooled state + RDKit 2D (0.4.0's) against + Morgan counts too
    OMP_NUM_THREADS=1 python benchmarks/moleculenet/tree_weight.py \
        --tree-kinds rdkit2d rdkit2d+morgan --threads 1 --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]  # benchmarks/<group>/NAME.py
CRITERIA = ("roc_auc", "brier")  # what the held-out molecules choose the weight by


def _weighted(est, smiles: list[str]) -> dict[float, np.ndarray]:
    """Probabilities [n, T] of canonical ``smiles`` per tree weight, from one pass of the
    network and the trees."""
    from exlm_chem.sklearn.ensemble import TREE_WEIGHTS

    samples, trees = est._all_outputs(smiles, None)  # [M, V, n, T], [n, T]
    fitted, out = est.tree_weight_, {}
    for w in TREE_WEIGHTS:
        est.tree_weight_ = w
        out[w] = est._combined(samples, trees)
    est.tree_weight_ = fitted
    return out


def head_params() -> dict:
    """The estimator's tree head the study measures: 0.4.0's, histogram boosting
    (``tree_booster="hist"``) on the pre-trained pooled state and RDKit 2D, the boosted
    trees alone (the study fits the forest member itself, ``--rescore-rf``, and weighs each
    member apart)."""
    from exlm_chem.model.frozen_trees import HIST_TREE_KINDS

    return {"tree_booster": "hist", "tree_features": list(HIST_TREE_KINDS),
            "tree_forest": False}


def _refit_trees(est, fit_smiles: list[str], labels: np.ndarray, kinds: tuple[str, ...]):
    """The tree head refitted on ``kinds`` beside the same pre-trained states, on the rows
    the estimator trained on (0.4.0's histogram boosting, as :func:`head_params`); with the
    CPU seconds of its features and of its trees."""
    from exlm_chem.data.feature_spec import raw_features
    from exlm_chem.model.frozen_trees import FrozenTrees
    from exlm_chem.model.molecule_model import EMBED

    head = est.tree_head_
    train_rows = np.flatnonzero(~est.held_out_mask_)
    states = head.model.run(fit_smiles, EMBED, 2 * est.batch_size)  # [n, d]
    cpu = time.process_time()
    raw = raw_features(kinds, fit_smiles, None, est.n_jobs)  # [n, F]
    features_cpu = time.process_time() - cpu
    cpu = time.process_time()
    refitted = FrozenTrees.fit(head.model, states, raw, labels, train_rows,
                               "classification", est.seed_, kinds, booster="hist")
    return refitted, round(features_cpu, 1), round(time.process_time() - cpu, 1)


#: the split's part a study scores: "test" as the runner does (train + valid fitted);
#: "valid" fits train alone and scores the validation part in the test part's place, so a
#: lever can be chosen without reading the test part
PARTS = ("test", "valid")


def scored_split(task: str, seed: int, part: str = "test"):
    """The paper's scaffold split of ``task`` for ``seed`` as the study fits and scores it
    (:data:`PARTS`): the rows it scores are ``.test``, the rows it fits ``.train`` +
    ``.valid`` (``valid`` empty for ``part="valid"``)."""
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles

    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    data = with_canonical_smiles(load_task(task, "scaffold", seed))
    if part == "valid":
        data = data._replace(test=data.valid, valid=data.valid[:0])
    return data


def fit_and_score(task: str, seed: int, model: str,
                  variants: list[tuple[str, ...]] | None = None,
                  outputs: Path | None = None, part: str = "test") -> list[dict]:
    """Records, one per tree-kinds variant (None: the fitted head only): ROC-AUC on the
    scored part (``test_roc_auc``: the test part, or the validation part for
    ``part="valid"``) and held-out ROC-AUC / Brier per tree weight."""
    from exlm_chem.benchmark.encoders import _default_estimator
    from exlm_chem.benchmark.records import Budget, MethodOutput
    from exlm_chem.benchmark.scoring import score_cell
    from exlm_chem.metrics import mean_roc_auc
    from exlm_chem.model.frozen_trees import HIST_TREE_KINDS, STATES_KIND

    data = scored_split(task, seed, part)
    est = _default_estimator("classification", Path(model), seed, Budget(), "cpu", ())
    est.set_params(**head_params())  # 0.4.0's head, the boosted trees alone
    if not est.tree_head:
        raise ValueError("the classifier's defaults have no tree head: nothing to weigh")
    rows = np.concatenate([data.train, data.valid])
    fit_smiles = [data.smiles[i] for i in rows]
    began, cpu = time.perf_counter(), time.process_time()
    est.fit(fit_smiles, data.labels[rows])
    fit_wall, fit_cpu = time.perf_counter() - began, time.process_time() - cpu
    if est.fit_invalid_mask_.any():
        raise ValueError(f"{task}: the benchmark's molecules should all be valid")

    held = np.flatnonzero(est.held_out_mask_)
    held_labels = data.labels[rows][held]  # [n_held, T]
    known = ~np.isnan(held_labels)
    test_smiles = [data.smiles[i] for i in data.test]
    samples = est._all_outputs(test_smiles, None)[0]  # [M, V, n, T] logits
    if samples.shape[:2] != (1, 1):
        raise ValueError("the kept network outputs assume one member and one view")
    kept = {"network": samples[0, 0]}  # [n, T] logits
    records = []
    for kinds in variants or [None]:
        record = {"task": task, "seed": seed, "part": part, "n_held_out": int(held.size)}
        if kinds is not None:
            est.tree_head_, features_cpu, trees_cpu = _refit_trees(
                est, fit_smiles, data.labels[rows], kinds)
            record.update(tree_kinds="+".join(kinds), tree_features_cpu_s=features_cpu,
                          tree_fit_cpu_s=trees_cpu)
            kept["+".join(kinds)] = est._all_outputs(test_smiles, None)[1]  # [n, T] logits
        test = _weighted(est, test_smiles)
        held_out = _weighted(est, [fit_smiles[i] for i in held])
        record.update(test_roc_auc={}, held_out_roc_auc={}, held_out_brier={})
        for w in test:
            record["test_roc_auc"][str(w)] = 100 * score_cell(data, MethodOutput(test[w]))[0]
            record["held_out_roc_auc"][str(w)] = (
                100 * mean_roc_auc(held_labels, held_out[w]).mean)
            brier = np.square(held_out[w] - held_labels)[known].mean()
            record["held_out_brier"][str(w)] = float(brier)
        records.append({**record, "fit_wall_s": round(fit_wall, 1),
                        "fit_cpu_s": round(fit_cpu, 1)})
    if outputs is not None and variants:
        outputs.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(outputs / f"{task}_{seed}.npz", test_rows=data.test,
                            part=np.array(part),
                            fit_rows=rows, held_out_mask=est.held_out_mask_,
                            default_kinds=np.array("+".join(
                                k for k in HIST_TREE_KINDS if k != STATES_KIND)), **kept)
    return records


#: members averaged with the network at one half in ``--rescore-rf`` (the rest: the network)
MIXES = ("trees", "forest", "trees+forest")


def mixes(network_logits: np.ndarray, tree_logits: np.ndarray,
          forest: np.ndarray) -> dict[str, np.ndarray]:
    """Probabilities [n, T]: the network's (logits [n, T]) averaged at one half with the
    trees' (logits [n, T]), with the forest's probabilities [n, T], or with the mean of
    both; as the estimator averages (probabilities, one network member and view)."""
    from scipy.special import expit

    trees = expit(tree_logits)
    members = {"trees": trees, "forest": forest, "trees+forest": (trees + forest) / 2}
    return {name: (expit(network_logits) + members[name]) / 2 for name in MIXES}


def held_out_mask(smiles: list[str], seed: int, fraction: float = 0.1) -> np.ndarray:
    """The estimator's held-out rows of its fit's canonical ``smiles`` for
    ``random_state=seed`` (its fit's rule: whole scaffolds since 0.5.0)."""
    from exlm_chem.data.splits import held_out_split

    mask = np.zeros(len(smiles), dtype=bool)
    mask[held_out_split(smiles, seed, fraction).valid_rows] = True
    return mask


def random_held_out_mask(n: int, seed: int, fraction: float = 0.1) -> np.ndarray:
    """0.4.0's held-out rows of ``n`` fit rows for ``random_state=seed``: a random
    ``fraction`` of them (none when that rounds to 0 rows or to all). The rule of the
    committed records, for kept outputs from before the mask was stored (all made with it)."""
    from sklearn.utils import check_random_state

    drawn = int(check_random_state(seed).randint(np.iinfo(np.int32).max))
    order = np.random.default_rng(drawn).permutation(n)
    n_valid = round(fraction * n)
    mask = np.zeros(n, dtype=bool)
    if 0 < n_valid < n:
        mask[order[:n_valid]] = True
    return mask


def rescore_rf(path: Path) -> dict:
    """One record of ``--rescore-rf`` from the kept outputs ``path`` (TASK_SEED.npz)."""
    from exlm_chem.benchmark.records import Budget, MethodOutput
    from exlm_chem.benchmark.rf import rf_method
    from exlm_chem.benchmark.scoring import score_cell

    task, seed = path.stem.rsplit("_", 1)
    seed = int(seed)
    kept = np.load(path, allow_pickle=False)
    part = str(kept["part"]) if "part" in kept else "test"
    data = scored_split(task, seed, part)
    if not np.array_equal(kept["test_rows"], data.test):
        raise ValueError(f"{path}: its test rows are not this split's")
    rows = (kept["fit_rows"] if "fit_rows" in kept
            else np.concatenate([data.train, data.valid]))
    held = (kept["held_out_mask"] if "held_out_mask" in kept
            else random_held_out_mask(len(rows), seed))
    began = time.process_time()
    forest = rf_method(data._replace(train=rows[~held]), seed, Budget(),
                       features="rdkit2d").test_scores
    forest_cpu = time.process_time() - began
    out = mixes(kept["network"], kept[str(kept["default_kinds"])], forest)
    record = {"task": task, "seed": seed, "part": part, "forest_cpu_s": round(forest_cpu, 1),
              "test_roc_auc": {"network": 100 * score_cell(data, MethodOutput(kept["network"]))[0],
                               "forest": 100 * score_cell(data, MethodOutput(forest))[0]}}
    for name, proba in out.items():
        record["test_roc_auc"][f"network+{name}"] = 100 * score_cell(
            data, MethodOutput(proba))[0]
    return record


def chosen(record: dict, criterion: str) -> str:
    """The weight (a key of the record's dicts) the held-out molecules choose by
    ``criterion``: the highest ROC-AUC or the lowest Brier score; the first of equals."""
    values = record[f"held_out_{criterion}"]
    sign = -1 if criterion == "roc_auc" else 1
    return min(values, key=lambda w: sign * values[w])


def report(records: list[dict]) -> str:
    """Markdown: per tree-kinds variant (records without one: the fitted head), per task,
    mean test ROC-AUC over seeds at each weight and at the weight each criterion chose, and
    the mean over tasks."""
    variants = list(dict.fromkeys(r.get("tree_kinds") for r in records))
    if len(variants) > 1:
        return "\n\n".join(f"### tree head reads the pooled state + {v or 'the default'}"
                             f"\n\n{report([r for r in records if r.get('tree_kinds') == v])}"
                             for v in variants)
    weights = list(records[0]["test_roc_auc"])
    columns = [f"w={w}" for w in weights] + [f"held-out {c}" for c in CRITERIA]
    lines = ["| task | seeds | " + " | ".join(columns) + " |",
             "|---|---|" + "---:|" * len(columns)]
    means = []
    for task in dict.fromkeys(r["task"] for r in records):
        rs = [r for r in records if r["task"] == task]
        row = [np.mean([r["test_roc_auc"][w] for r in rs]) for w in weights]
        row += [np.mean([r["test_roc_auc"][chosen(r, c)] for r in rs]) for c in CRITERIA]
        means.append(row)
        seeds = " ".join(str(r["seed"]) for r in rs)
        lines.append(f"| {task} | {seeds} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    mean = np.mean(means, axis=0)
    lines.append(f"| mean of {len(means)} | | " + " | ".join(f"{v:.1f}" for v in mean) + " |")
    picks = {c: [f"{r['task']}/{r['seed']}: {chosen(r, c)}" for r in records] for c in CRITERIA}
    lines += ["", *(f"- weights chosen by held-out {c}: " + ", ".join(p)
                    for c, p in picks.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["bbbp", "bace", "clintox", "sider"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--model", default=str(REPO / "models" / "exlm-small"))
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--tree-kinds", nargs="+", default=None, metavar="KINDS",
                        help="tree-head variants to refit after the one network fit, each "
                             "feature kinds joined by '+' (e.g. rdkit2d rdkit2d+morgan)")
    parser.add_argument("--rescore-rf", action="store_true",
                        help="score a random forest on RDKit 2D as a further member against "
                             "the outputs kept in OUT/outputs (no network fit)")
    parser.add_argument("--part", choices=PARTS, default="test",
                        help="the split's part scored: test (train + valid fitted, as the "
                             "runner) or valid (train alone fitted)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--report", action="store_true", help="print the table and stop")
    args = parser.parse_args(argv)

    results = args.out / "results.jsonl"
    records = ([json.loads(line) for line in results.read_text().splitlines()]
               if results.is_file() else [])
    if args.report:
        print(report(records) if records else f"no records in {results}")
        return 0
    if args.rescore_rf:
        return _rescore_all(args.out)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    from exlm_chem.provenance import git_commit, machine

    args.out.mkdir(parents=True, exist_ok=True)
    variants = (None if args.tree_kinds is None
                else [tuple(v.split("+")) for v in args.tree_kinds])
    wanted = [None] if variants is None else ["+".join(v) for v in variants]
    done = {(r["task"], r["seed"], r.get("tree_kinds")) for r in records}
    for task in args.tasks:
        for seed in args.seeds:
            if all((task, seed, v) in done for v in wanted):
                continue
            for record in fit_and_score(task, seed, args.model, variants,
                                        args.out / "outputs", args.part):
                record.update(commit=git_commit(), machine=machine())
                with results.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(f"{task} seed {seed} {record.get('tree_kinds', '')}: test " + ", ".join(
                    f"{w}: {v:.1f}" for w, v in record["test_roc_auc"].items())
                    + f" ({record['fit_cpu_s']:.0f} CPU-s)", flush=True)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    print(report(records))
    return 0


def _rescore_all(out: Path) -> int:
    from exlm_chem.provenance import git_commit, machine

    rescored = out / "rescored.jsonl"
    records = ([json.loads(line) for line in rescored.read_text().splitlines()]
               if rescored.is_file() else [])
    done = {(r["task"], r["seed"]) for r in records}
    for path in sorted((out / "outputs").glob("*.npz")):
        task, seed = path.stem.rsplit("_", 1)
        if (task, int(seed)) in done:
            continue
        record = {**rescore_rf(path), "commit": git_commit(), "machine": machine()}
        with rescored.open("a") as f:
            f.write(json.dumps(record) + "\n")
        records.append(record)
        print(f"{task} seed {seed}: " + ", ".join(
            f"{k} {v:.1f}" for k, v in record["test_roc_auc"].items()), flush=True)
    columns = list(records[0]["test_roc_auc"])
    print("| task | seeds | " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * len(columns))
    means = []
    for task in dict.fromkeys(r["task"] for r in records):
        rs = [r for r in records if r["task"] == task]
        row = [np.mean([r["test_roc_auc"][c] for r in rs]) for c in columns]
        means.append(row)
        print(f"| {task} | {' '.join(str(r['seed']) for r in rs)} | "
              + " | ".join(f"{v:.1f}" for v in row) + " |")
    print(f"| mean of {len(means)} | | "
          + " | ".join(f"{v:.1f}" for v in np.mean(means, axis=0)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
