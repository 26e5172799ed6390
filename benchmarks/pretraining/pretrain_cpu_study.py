"""The CPU pre-training study: probe checkpoints (and random-init controls) the one way.

Every checkpoint is read the way the study judges an encoder: frozen embeddings of the
five tasks' canonical SMILES (BBBP, BACE, ClinTox, SIDER, Tox21; the paper's scaffold
split), BOS and mean pooling, standardised, one logistic regression per task (the
runner's probe, ``C = PROBE_C``), test ROC-AUC. One JSON line per (checkpoint, pooling)
goes to ``--out``; a checkpoint already there (same weights' sha256) is skipped, so the
command can be re-run as snapshots appear.

``descriptors`` runs the same probe (tasks, split, logistic regression, ROC-AUC means) on
the package's RDKit 2D descriptors (:func:`exlm_chem.benchmark.features.task_features`,
missing values handled by its :class:`~exlm_chem.data.feature_spec.FeatureScaler`) instead
of embeddings: a reference row with pooling ``"none"``, keyed by the descriptor set
(names, RDKit version, scaling) instead of weights, so it too is written once.

    # probe a run's snapshots and final checkpoint
    python benchmarks/pretraining/pretrain_cpu_study.py probe runs/arm/snapshots/* \\
        runs/arm/checkpoint --arm exlm-aux --out benchmarks/results/pretrain_cpu_study/probes.jsonl
    # random-init controls of the same shape as a checkpoint, two seeds
    python benchmarks/pretraining/pretrain_cpu_study.py control runs/arm/checkpoint --seeds 0 1 \\
        --out benchmarks/results/pretrain_cpu_study/probes.jsonl
    # reference row: the same probe on RDKit 2D descriptors instead of embeddings
    python benchmarks/pretraining/pretrain_cpu_study.py descriptors \\
        --out benchmarks/results/pretrain_cpu_study/probes.jsonl
    # table (markdown) and learning curves (PNG)
    python benchmarks/pretraining/pretrain_cpu_study.py report \\
        --out benchmarks/results/pretrain_cpu_study/probes.jsonl

Probing runs on one thread (``--threads``; ``descriptors``: that many RDKit processes),
beside the training runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from exlm_chem.provenance import git_commit, load_average, machine

if TYPE_CHECKING:
    from exlm_chem.benchmark.tasks import TaskData

TASKS = ("bbbp", "bace", "clintox", "sider", "tox21")
REGRESSION_TASKS = ("esol", "freesolv", "lipo")  # the regression probe: ridge, RMSE
POOLINGS = ("bos", "mean")
NO_POOLING = "none"  # the pooling of a reference row that has no encoder (descriptors)
DESCRIPTOR_ARM = "rdkit2d descriptors (LR)"
DESCRIPTORS = "rdkit2d"  # the package's feature set (exlm_chem.benchmark.features)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tasks(names: tuple[str, ...] = TASKS) -> dict[str, TaskData]:
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles

    return {name: with_canonical_smiles(load_task(name, "scaffold", 0)) for name in names}


def _roc_auc(features: np.ndarray, data: TaskData, part: str = "test") -> float:
    """Test ROC-AUC of the study's probe on one task's features [N, F]: standardised, one
    logistic regression per label (``C = PROBE_C``), unweighted mean over fitted labels."""
    return _roc_aucs(features, data)[part]


def _roc_aucs(features: np.ndarray, data: TaskData) -> dict[str, float]:
    """Valid and test ROC-AUC of the probe (one fit on the training rows, as ``_roc_auc``):
    checkpoints are chosen on "valid", "test" is only reported."""
    from exlm_chem.benchmark.encoders import PROBE_C
    from exlm_chem.metrics import mean_roc_auc
    from exlm_chem.train.probe import probe_scores

    scored = np.concatenate([data.valid, data.test])
    predicted = probe_scores(features, data.labels, data.train, scored, C=PROBE_C)
    fitted = ~np.isnan(predicted).all(axis=0)
    out = {}
    parts = (("valid", slice(0, len(data.valid))), ("test", slice(len(data.valid), None)))
    for part, rows in parts:
        truth = data.labels[scored[rows]][:, fitted]
        out[part] = float(mean_roc_auc(truth, predicted[rows][:, fitted]).mean)
    return out


def _ridge_rmse(features: np.ndarray, data: TaskData) -> dict[str, float]:
    """Valid and test RMSE of the regression probe: standardised features, one ridge whose
    strength is chosen on the validation rows (:func:`exlm_chem.train.probe.ridge_predictions`)."""
    from exlm_chem.train.probe import ridge_predictions

    test, _, valid = ridge_predictions(features, data.labels, data.train, data.valid, data.test)
    rmse = {}
    for part, rows, predicted in (("valid", data.valid, valid), ("test", data.test, test)):
        rmse[part] = float(np.sqrt(np.nanmean((predicted[:, 0] - data.labels[rows, 0]) ** 2)))
    return rmse


def _with_means(row: dict[str, float]) -> dict[str, float]:
    """``row`` (task -> ROC-AUC) with "mean" over the five tasks and "mean4" without Tox21."""
    row["mean"] = float(np.mean([row[t] for t in TASKS]))
    row["mean4"] = float(np.mean([row[t] for t in ("bbbp", "bace", "clintox", "sider")]))
    return row


def probe_checkpoint(checkpoint: Path, tasks: dict[str, TaskData],
                     layers: int | None = None,
                     poolings: tuple[str, ...] = POOLINGS) -> dict[str, dict]:
    """Pooling -> {"roc_auc": {task: test ROC-AUC, "mean": ..., "mean4": ...},
    "valid_roc_auc": the same on the validation rows, and, for the regression tasks among
    ``tasks``, "rmse" / "valid_rmse": {task: RMSE}} of one checkpoint.

    ``layers``: read the states after the first ``layers`` blocks (the final LayerNorm
    applied, as after the last one) instead of the whole stack.
    """
    from exlm_chem.model.molecule_model import EMBED, MoleculeModel

    model = MoleculeModel.from_checkpoint(checkpoint, device="cpu")
    if layers is not None:  # the first blocks alone: the encoder's own norm and layout follow
        blocks = model.encoder.blocks
        if not 1 <= layers <= len(blocks):
            raise ValueError(f"layers must be in 1..{len(blocks)}, got {layers}")
        model.encoder.blocks = blocks[:layers]
    scores: dict[str, dict] = {p: {"roc_auc": {}, "valid_roc_auc": {}, "rmse": {},
                                   "valid_rmse": {}} for p in poolings}
    for name, data in tasks.items():
        vectors = {p: model.view(p).run(data.smiles, EMBED, 128) for p in poolings}
        for pooling in poolings:
            row = scores[pooling]
            if data.task_type == "regression":
                rmse = _ridge_rmse(vectors[pooling], data)
                row["rmse"][name], row["valid_rmse"][name] = rmse["test"], rmse["valid"]
            else:
                auc = _roc_aucs(vectors[pooling], data)
                row["roc_auc"][name], row["valid_roc_auc"][name] = auc["test"], auc["valid"]
    for row in scores.values():
        _with_means(row["roc_auc"])
        _with_means(row["valid_roc_auc"])
        if not row["rmse"]:
            del row["rmse"], row["valid_rmse"]
    return scores


def probe_descriptors(tasks: dict[str, TaskData], n_jobs: int = 1) -> dict[str, float]:
    """{task: test ROC-AUC, "mean": ..., "mean4": ...} of the probe on RDKit 2D descriptors,
    scaled by the package's policy (:func:`~exlm_chem.benchmark.features.
    scaled_task_features`: fitted on the training rows, missing -> median, clipped);
    ``n_jobs`` bounds RDKit's worker processes."""
    from exlm_chem.benchmark.features import scaled_task_features

    return _with_means({name: _roc_auc(scaled_task_features(data, [DESCRIPTORS],
                                                            n_jobs=n_jobs), data)
                        for name, data in tasks.items()})


def descriptor_key() -> tuple[str, dict]:
    """The descriptor record's stable key (sha256) and what it hashes: the package's
    description of the feature set (names' checksum, RDKit version, scaling), so that
    another RDKit or descriptor list is probed again and the same one is skipped."""
    from exlm_chem.benchmark.features import feature_settings

    settings = feature_settings([DESCRIPTORS])
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest(), settings


def _key(sha256: str, layers: int | None = None) -> str:
    """A record's key: the weights' (or features') sha256, and the depth read if not all."""
    return sha256 if layers is None else f"{sha256}@{layers}"


def _done(out: Path) -> set[str]:
    """Keys already probed (:func:`_key`): weights' sha256, or a descriptor record's
    ``features_sha256``, with the depth of a layer probe."""
    if not out.exists():
        return set()
    records = [json.loads(line) for line in out.read_text().splitlines() if line]
    return {_key(r.get("weights_sha256") or r["features_sha256"], r.get("layers"))
            for r in records}


def _append(out: Path, records: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


def _records(checkpoint: Path, arm: str, scores: dict, seconds: float, extra: dict) -> list:
    meta = json.loads((checkpoint / "metadata.json").read_text())
    config = json.loads((checkpoint / "config.json").read_text())
    base = {
        "arm": arm,
        "checkpoint": str(checkpoint),
        "weights_sha256": _sha256(checkpoint / "model.safetensors"),
        "step": meta.get("steps", 0),
        "tokens_seen": meta.get("tokens_seen", 0),
        "cpu_seconds": meta.get("cpu_seconds"),
        "recipe": meta.get("recipe"),
        "d_model": config["d_model"],
        "objective": config["objective"],
        "probe_seconds": round(seconds, 1),
        "commit": git_commit(),
        "machine": machine(),
        "load_average": load_average(),
        "split": "scaffold (paper), canonical SMILES",
        **extra,
    }
    return [{**base, "pooling": p, **s} for p, s in scores.items()]


def cmd_probe(args: argparse.Namespace) -> None:
    out = Path(args.out)
    done = _done(out)
    tasks = None
    for path in map(Path, args.checkpoints):
        if not (path / "model.safetensors").is_file():
            continue
        weights = _sha256(path / "model.safetensors")
        for layers in args.layers or [None]:
            if _key(weights, layers) in done:
                print(f"{path} (layers {layers or 'all'}): probed already")
                continue
            tasks = tasks or _tasks(TASKS + (REGRESSION_TASKS if args.regression else ()))
            start = time.monotonic()
            scores = probe_checkpoint(path, tasks, layers, tuple(args.poolings))
            extra = {} if layers is None else {"layers": layers}
            _append(out, _records(path, args.arm, scores, time.monotonic() - start, extra))
            print(f"{path} (layers {layers or 'all'}): "
                  + "; ".join(_summary(p, s) for p, s in scores.items()), flush=True)


def _summary(pooling: str, scores: dict) -> str:
    text = (f"{pooling} test {scores['roc_auc']['mean']:.4f} valid "
            f"{scores['valid_roc_auc']['mean']:.4f}")
    if "rmse" in scores:
        text += " rmse " + " ".join(f"{t} {v:.3f}" for t, v in scores["rmse"].items())
    return text


def random_checkpoint(source: Path, seed: int, parent: Path) -> tuple[Path, str]:
    """Random weights in the shape of the checkpoint ``source`` (same config, descriptor
    head dropped), saved under ``parent``; returns the directory and the arm's name."""
    from exlm_chem.model import ExLMConfig, ExLMModel
    from exlm_chem.model.checkpoint import save_checkpoint

    config = ExLMConfig.from_json(source / "config.json")
    config = ExLMConfig.from_dict({**config.to_dict(), "n_descriptors": 0})
    tokens = (source / "vocab.txt").read_text().split("\n")[: config.vocab_size]
    torch.manual_seed(seed)
    model = ExLMModel(config)
    path = parent / f"random-d{config.d_model}-{config.objective}-seed{seed}"
    save_checkpoint(path, model, config, tokens,
                    {"steps": 0, "tokens_seen": 0, "cpu_seconds": 0.0,
                     "objective": config.objective})
    return path, f"random-init d{config.d_model} {config.objective}"


def cmd_control(args: argparse.Namespace) -> None:
    """Random weights in the shape of a checkpoint (same config, descriptor head dropped)."""
    out = Path(args.out)
    tasks = _tasks(TASKS + (REGRESSION_TASKS if args.regression else ()))
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            path, arm = random_checkpoint(Path(args.checkpoint), seed, Path(tmp))
            if _sha256(path / "model.safetensors") in _done(out):
                print(f"{path.name}: probed already")
                continue
            start = time.monotonic()
            scores = probe_checkpoint(path, tasks)
            _append(out, _records(path, arm, scores, time.monotonic() - start,
                                  {"control_seed": seed}))
        print(f"{arm} seed {seed}: " + "; ".join(_summary(p, s) for p, s in scores.items()),
              flush=True)


def cmd_descriptors(args: argparse.Namespace) -> None:
    """The probe on RDKit 2D descriptors: one reference record (pooling ``"none"``)."""
    from exlm_chem.data.descriptors import feature_names

    out = Path(args.out)
    key, settings = descriptor_key()
    if key in _done(out):
        print(f"{DESCRIPTOR_ARM}: probed already")
        return
    tasks = _tasks()
    start = time.monotonic()
    scores = probe_descriptors(tasks, n_jobs=args.threads)
    record = {
        "arm": DESCRIPTOR_ARM,
        "checkpoint": None,
        "weights_sha256": None,  # no weights: _done and readers key it by features_sha256
        "features_sha256": key,
        "features": DESCRIPTORS,
        "feature_settings": settings,
        "n_features": len(feature_names(DESCRIPTORS)),
        "data_sha256": {name: data.data_sha256 for name, data in tasks.items()},
        "step": 0,
        "tokens_seen": 0,
        "cpu_seconds": None,
        "recipe": None,
        "d_model": None,
        "objective": None,
        "probe_seconds": round(time.monotonic() - start, 1),
        "commit": git_commit(),
        "machine": machine(),
        "load_average": load_average(),
        "split": "scaffold (paper), canonical SMILES",
        "pooling": NO_POOLING,
        "roc_auc": scores,
    }
    _append(out, [record])
    print(f"{DESCRIPTOR_ARM}: mean {scores['mean']:.4f} mean4 {scores['mean4']:.4f} "
          f"({record['probe_seconds']:.0f} s)", flush=True)


def _is_reference(record: dict) -> bool:
    """A row with no encoder behind it (descriptors): no pooling, tokens or CPU time."""
    return record["pooling"] == NO_POOLING


def _without_clintox(record: dict) -> float:
    """ClinTox's test split holds few positives: its ROC-AUC swings by 10 points between
    random-init seeds, so every mean is also shown without it."""
    return float(np.mean([record["roc_auc"][t] for t in TASKS if t != "clintox"]))


def cmd_report(args: argparse.Namespace) -> None:
    records = [json.loads(line) for line in Path(args.out).read_text().splitlines() if line]
    points: dict[tuple, dict] = {}
    for i, r in enumerate(records):
        if r.get("layers"):  # a layer probe is its own curve: the states after n blocks
            r = {**r, "arm": f"{r['arm']} @ {r['layers']} blocks"}
        # one point, its latest record: a run's final checkpoint and last snapshot can be
        # the same step, a point can be probed again, and a control seed is known by its
        # seed (its weights file's bytes can differ between commits)
        point = ((r["arm"], r["pooling"], r["step"], r["tokens_seen"]) if r["step"] else
                 (r["arm"], r["pooling"], r["control_seed"]) if "control_seed" in r else i)
        if point in points:  # the CPU column names the machine of the first record
            r = {**r, "machine": points[point]["machine"]}
        points[point] = r
    arms: dict[str, list] = {}
    for r in points.values():
        arms.setdefault(r["arm"], []).append(r)
    lines = ["| arm | pooling | CPU-min (machine) | tokens (M) | " + " | ".join(TASKS)
             + " | mean (5) | mean w/o ClinTox (4) |", "|---|---|---:|---:|" + "---:|" * 7]
    # reference rows (descriptors) last: they are no arm of the study, only a yardstick
    for arm, rows in sorted(arms.items(), key=lambda item: (_is_reference(item[1][0]), item[0])):
        for r in sorted(rows, key=lambda r: (r["pooling"], r["tokens_seen"])):
            cpu = r["cpu_seconds"] or 0.0
            cells = " | ".join(f"{100 * r['roc_auc'][t]:.1f}" for t in TASKS)
            spent = (("— (reference)", "—") if _is_reference(r) else
                     (f"{cpu / 60:.0f} ({_cpu_name(r)})", f"{r['tokens_seen'] / 1e6:.2f}"))
            lines.append(f"| {arm} | {r['pooling']} | {spent[0]} | {spent[1]} | {cells} | "
                         f"{100 * r['roc_auc']['mean']:.1f} | {100 * _without_clintox(r):.1f} |")
    print("\n".join(lines))
    print()
    print("\n".join(_bought(arms)))
    print()
    print("\n".join(_selection_and_regression(arms)))
    if args.plot:
        _plot(arms, args.plot)


def _control_means(arms: dict[str, list]) -> dict[tuple, tuple[float, float]]:
    """(d_model, pooling) -> the random-init controls' mean probe (5 tasks, w/o ClinTox),
    averaged over their seeds: the yardstick an arm of that width is read against."""
    grouped: dict[tuple, list] = {}
    for arm, rows in arms.items():
        if arm.startswith("random-init"):
            for r in rows:
                grouped.setdefault((r.get("d_model"), r["pooling"]), []).append(r)
    return {key: (float(np.mean([r["roc_auc"]["mean"] for r in rows])),
                  float(np.mean([_without_clintox(r) for r in rows])))
            for key, rows in grouped.items()}


def _bought(arms: dict[str, list]) -> list[str]:
    """What each arm bought: its last point against the random-init control of its width,
    as points over the control and as points per CPU-hour spent (CPU-hours count from the
    start of the run the point belongs to, branches and continuations included)."""
    controls = _control_means(arms)
    lines = ["| arm | pooling | CPU-h (machine) | tokens (M) | mean (5) | vs control | "
             "per CPU-h | w/o ClinTox | vs control | per CPU-h |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for arm, rows in sorted(arms.items()):
        if arm.startswith("random-init") or _is_reference(rows[0]):
            continue
        for pooling in POOLINGS:
            points = [r for r in rows if r["pooling"] == pooling]
            control = controls.get((points[-1].get("d_model"), pooling)) if points else None
            if control is None:
                continue
            last = max(points, key=lambda r: r["tokens_seen"])
            hours = (last["cpu_seconds"] or 0.0) / 3600
            five, four = 100 * last["roc_auc"]["mean"], 100 * _without_clintox(last)
            gain5, gain4 = five - 100 * control[0], four - 100 * control[1]
            lines.append(
                f"| {arm} | {pooling} | {hours:.2f} ({_cpu_name(last)}) | "
                f"{last['tokens_seen'] / 1e6:.2f} | {five:.1f} | {gain5:+.1f} | "
                f"{gain5 / hours:+.2f} | {four:.1f} | {gain4:+.1f} | {gain4 / hours:+.2f} |")
    return lines


def _selection_and_regression(arms: dict[str, list]) -> list[str]:
    """The points probed since the validation and regression probes were recorded: the
    5-task mean on the validation rows (what a shipped checkpoint is chosen by) beside the
    test mean, and the ridge probe's test RMSE on the regression sets (lower is better)."""
    lines = ["| arm | pooling | tokens (M) | valid mean (5) | test mean (5) | "
             + " | ".join(f"{t} RMSE" for t in REGRESSION_TASKS) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(REGRESSION_TASKS)]
    for arm, rows in sorted(arms.items()):
        for r in sorted(rows, key=lambda r: (r["pooling"], r["tokens_seen"])):
            if "valid_roc_auc" not in r:
                continue
            rmse = r.get("rmse", {})
            cells = " | ".join(f"{rmse[t]:.3f}" if t in rmse else "–" for t in REGRESSION_TASKS)
            seed = f" (seed {r['control_seed']})" if "control_seed" in r else ""
            lines.append(f"| {arm}{seed} | {r['pooling']} | {r['tokens_seen'] / 1e6:.2f} | "
                         f"{100 * r['valid_roc_auc']['mean']:.1f} | "
                         f"{100 * r['roc_auc']['mean']:.1f} | {cells} |")
    return lines


def _cpu_name(record: dict) -> str:
    """The CPU's vendor: CPU-minutes buy different tokens on different machines."""
    return record["machine"].split()[0].split("(")[0]


def _plot(arms: dict[str, list], path: str) -> None:
    """Probe means against tokens seen (the axis every machine shares), with and without
    ClinTox, one column per pooling; random-init controls and reference rows (descriptors,
    in every column) as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = {"mean of 5 tasks": lambda r: 100 * r["roc_auc"]["mean"],
              "mean w/o ClinTox (4)": lambda r: 100 * _without_clintox(r)}
    fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True)
    # one style per curve: tab20's colours, solid, then dashed, then dotted (the study has
    # more than 40 arms); MLM arms square
    curves = [arm for arm, rows in sorted(arms.items())
              if not arm.startswith("random-init") and not all(_is_reference(r) for r in rows)]
    palette = plt.get_cmap("tab20").colors
    dashes = ("-", "--", ":")
    styles = {arm: (palette[i % len(palette)], dashes[i // len(palette) % len(dashes)])
              for i, arm in enumerate(curves)}
    for row, (label, score) in enumerate(scores.items()):
        for col, pooling in enumerate(POOLINGS):
            ax = axes[row, col]
            for arm, rows in sorted(arms.items()):
                if all(_is_reference(r) for r in rows):
                    value = np.mean([score(r) for r in rows])
                    ax.axhline(value, linestyle=":", linewidth=1.5, color="tab:brown",
                               label=f"{arm} ({value:.1f})")
                    continue
                rows = sorted((r for r in rows if r["pooling"] == pooling),
                              key=lambda r: r["tokens_seen"])
                if arm.startswith("random-init"):
                    value = np.mean([score(r) for r in rows])
                    ax.axhline(value, linestyle="--", linewidth=1, label=f"{arm} ({value:.1f})",
                               color="grey" if "d256" in arm else "black")
                    continue
                colour, linestyle = styles[arm]
                ax.plot([r["tokens_seen"] / 1e6 for r in rows], [score(r) for r in rows],
                        marker="s" if rows and rows[0].get("objective") == "mlm" else "o",
                        color=colour, linestyle=linestyle, label=arm)
            ax.set_title(f"{pooling} pooling")
            ax.set_ylabel(f"probe ROC-AUC x100, {label}")
            ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("pre-training tokens seen (M)")
    fig.tight_layout()
    # the legend outside the axes: inside tight_layout it would squeeze the plots
    axes[0, 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"curves in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe")
    probe.add_argument("checkpoints", nargs="+")
    probe.add_argument("--arm", required=True)
    probe.add_argument("--out", required=True)
    probe.add_argument("--poolings", nargs="+", choices=POOLINGS, default=list(POOLINGS))
    probe.add_argument("--layers", type=int, nargs="+",
                       help="probe the states after this many blocks (each value in turn)")
    probe.add_argument("--regression", action="store_true",
                       help="also the regression probe (ridge on ESOL, FreeSolv, Lipophilicity)")
    control = sub.add_parser("control")
    control.add_argument("checkpoint")
    control.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    control.add_argument("--out", required=True)
    control.add_argument("--regression", action="store_true",
                         help="also the regression probe (ridge on ESOL, FreeSolv, Lipophilicity)")
    descriptors = sub.add_parser("descriptors")
    descriptors.add_argument("--out", required=True)
    report = sub.add_parser("report")
    report.add_argument("--out", required=True)
    report.add_argument("--plot", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    {"probe": cmd_probe, "control": cmd_control, "descriptors": cmd_descriptors,
     "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    main()
