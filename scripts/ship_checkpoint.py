"""Turn a pre-training run into a shipped checkpoint under models/, with its model card.

    python scripts/ship_checkpoint.py --run RUN_DIR --name exlm-small [--probe]
    # then probe the shipped weights the study's way and rewrite the card
    python benchmarks/pretraining/pretrain_cpu_study.py probe models/exlm-small --arm exlm-small \\
        --out benchmarks/results/pretrain_cpu_study/probes.jsonl
    python scripts/ship_checkpoint.py --name exlm-small --card-only

Writes ``models/NAME/`` (config.json, 16-bit model.safetensors, vocab.txt, metadata.json)
and ``models/NAME/MODEL_CARD.md`` from the run's measured metadata. With ``--probe`` it
also runs the probe-mode benchmark (frozen embeddings + logistic regression per task,
scaffold split, ``--pooling``) on the 7 MoleculeNet tasks and records the results in both
files.

The card's "Frozen-feature probe" section is issue 30's study protocol
(``benchmarks/pretraining/pretrain_cpu_study.py``): the records of ``--study`` whose weights' sha256
is the shipped ``model.safetensors``'s, beside the random-init control of the same
d_model, RF on ECFP4 (the runner's records in ``--results``) and the same probe on RDKit
2D descriptors. A column without records reads "n/a"; no figure is filled in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from exlm_chem.model.checkpoint import copy_checkpoint, load_checkpoint

REPO = Path(__file__).resolve().parents[1]
STUDY_FILE = REPO / "benchmarks" / "results" / "pretrain_cpu_study" / "probes.jsonl"
RUNNER_FILE = REPO / "benchmarks" / "results" / "moleculenet_scaffold" / "results.jsonl"
STUDY_SCRIPT = "benchmarks/pretraining/pretrain_cpu_study.py"
POOLINGS = ("bos", "mean")
CARD_POOLING = "mean"  # the pooling the card leads with (the package's default-to-be)
_POOLING_WORDS = {"bos": "BOS", "mean": "mean-pooled"}
# What the study writes (benchmarks/pretraining/pretrain_cpu_study.py: TASKS, DESCRIPTOR_ARM);
# a test checks that the two agree, so that this script need not import a benchmark module.
STUDY_TASKS = ("bbbp", "bace", "clintox", "sider", "tox21")
DESCRIPTOR_ARM = "rdkit2d descriptors (LR)"
CONTROL_PREFIX = "random-init"
MEAN_ALL = "mean (5)"
# ClinTox's test split holds few positives and swings by 10 points between random-init
# seeds: every mean is also shown without it, as the study's report does
MEAN_NO_CLINTOX = "mean without ClinTox"
STUDY_ROWS = (*STUDY_TASKS, MEAN_ALL, MEAN_NO_CLINTOX)


def run_probe(model_dir: Path, names: list[str], pooling: str = CARD_POOLING) -> dict:
    """Probe-mode benchmark of ``model_dir`` on ``names`` (frozen ``pooling`` embeddings)."""
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.splits import scaffold_split
    from exlm_chem.embedding import embed
    from exlm_chem.model.molecule_model import MoleculeModel
    from exlm_chem.train.probe import probe_dataset

    embedder = MoleculeModel.from_checkpoint(model_dir, device="cpu")
    results = {}
    for name in names:
        start = time.monotonic()
        data = load_moleculenet(name)
        vectors, valid = embed(data.smiles, model=embedder, pooling=pooling, batch_size=128)
        assert valid.all(), f"{name}: loader-valid SMILES failed to embed"
        result = probe_dataset(name, vectors, data.labels, scaffold_split(data.smiles))
        results[name] = {
            "roc_auc": result.roc_auc,
            "prc_auc": result.prc_auc,
            "n_train": result.n_train,
            "n_test": result.n_test,
            "seconds": round(time.monotonic() - start, 1),
        }
        print(name, results[name], flush=True)
    results["mean_roc_auc"] = float(np.mean([results[n]["roc_auc"] for n in names]))
    return results


def probe_from_results(out: Path, results: Path, command: str) -> None:
    """Replace metadata.json's probe figures with the benchmark's records of this model."""
    from exlm_chem.benchmark.encoders import checkpoint_id
    from exlm_chem.benchmark.records import ResultsFile

    model_id = checkpoint_id(out)
    rows = [r for r in ResultsFile(results).latest()
            if r.model == model_id and r.mode == "probe" and r.seed == 0 and r.protocol]
    if not rows:
        raise SystemExit(f"no current probe records of {model_id} in {results}")
    probe = {r.task: {"roc_auc": r.roc_auc, "prc_auc": r.prc_auc, "n_train": r.n_train,
                      "n_test": r.n_test, "seconds": r.wall_s} for r in rows}
    probe["mean_roc_auc"] = float(np.mean([r.roc_auc for r in rows]))
    (first,) = {(r.commit, r.machine, json.dumps(r.protocol["inputs"]),
                 r.protocol["version"]) for r in rows}
    meta = json.loads((out / "metadata.json").read_text())
    meta["probe"] = probe
    meta.pop("probe_pooling", None)  # run_probe's; these records name their own pooling
    meta["probe_source"] = {"where": _display(results),
                            "commit": first[0], "machine": first[1], "inputs": first[2],
                            "version": first[3], "command": command}
    (out / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")


_TARGET_TITLES = {"rdkit2d": "RDKit 2D descriptors", "rdkit2d_fast": "fast RDKit 2D descriptors",
                  "morgan": "Morgan counts"}


def _recipe(meta: dict) -> str:
    """Objective, mask ratio, auxiliary descriptor weight, width and dropout of the run."""
    recipe = meta.get("recipe")
    if not recipe:
        return "not recorded (trained before recipes were recorded)"
    aux = "no auxiliary loss"
    if recipe.get("aux_weight"):
        targets = meta.get("descriptors") or {}
        handling = "".join([
            f", targets clipped at ±{recipe['aux_clip']:g}" if recipe.get("aux_clip") else "",
            f", {recipe['aux_share']:g} of the columns per step"
            if recipe.get("aux_share", 1.0) < 1.0 else ""])
        aux = (f"descriptor auxiliary loss x{recipe['aux_weight']} ({targets.get('count')} "
               f"{_TARGET_TITLES.get(targets.get('kind', 'rdkit2d'), targets.get('kind'))}"
               f"{handling}; scaler in metadata.json)")
    if recipe.get("contrast_weight"):  # recipes before the option: none
        aux += (f", SMILES-equivalence loss x{recipe['contrast_weight']:g} (temperature "
                f"{recipe['contrast_temperature']:g})")
    if recipe.get("translate_weight"):  # recipes before the option: none
        aux += (f", translation to the canonical SMILES x{recipe['translate_weight']:g} (GRU "
                "decoder from the pooled states of a randomised SMILES)")
    objective = recipe["objective"]
    if recipe.get("token_weight", 1.0) != 1.0:  # recipes before the option: weight 1
        objective += f" x{recipe['token_weight']:g}"
    return (f"objective {objective}, mask ratio {recipe['mask_ratio']}, {aux}, "
            f"d_model {recipe['d_model']}, k {recipe['k_states']}, dropout "
            f"{recipe.get('dropout')}")


def _segments(meta: dict) -> str:
    """The runs this one started from (``--init-from``), oldest first."""
    lineage = meta.get("lineage") or []
    return "; ".join(f"{s['init_from']} ({s['tokens_seen']:,} tokens, "
                     f"{(s.get('cpu_seconds') or 0) / 3600:.2f} CPU-hours)"
                     for s in lineage) or "none"


def _display(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (cards move with it)."""
    path = Path(path)
    if path.is_absolute() and path.is_relative_to(REPO):
        return str(path.relative_to(REPO))
    return str(path)


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _preparation_row(counts: dict | None) -> list[str]:
    """What corpus preparation kept of the files' lines; checkpoints from before
    ``corpus_counts`` was recorded have no row."""
    if not counts:
        return []
    return [
        f"| corpus preparation | {counts['lines']:,} lines: {counts['unparsable_removed']:,} "
        f"unparsable and {counts['duplicates_removed']:,} duplicates (same canonical SMILES) "
        f"removed, then {counts['hygiene_removed']:,} benchmark molecules; "
        f"{counts['molecules']:,} molecules ({counts['train']:,} train / {counts['valid']:,} "
        f"valid) |"
    ]


def _field_table(name: str, meta: dict, config: dict) -> list[str]:
    """Title and the table of what the run was: architecture, data, recipe, tokens, time."""
    args = meta.get("pretrain_args", {})
    valid = meta.get("last_validation") or {}
    hygiene = meta.get("hygiene", {})
    return [
        f"# {name}",
        "",
        f"**{meta.get('status', 'CPU-trained, interim')}.** Objective `{meta['objective']}`"
        + (" (the plain-MLM twin of exlm-small)" if meta["objective"] == "mlm" else ""),
        "",
        "| field | value |",
        "|---|---|",
        f"| architecture | {config['n_layers']} pre-LN layers, d {config['d_model']}, "
        f"{config['n_heads']} heads, FFN {config['d_ffn']}, k {config['k_states']}, 2D RoPE |",
        f"| parameters | {meta['num_parameters']:,} (stored as {meta['dtype']}) |",
        f"| corpus | {', '.join(Path(p).name for p in meta['corpus_sha256'])} |",
        "| corpus sha256 | "
        + "; ".join(f"{Path(p).name}: {h}" for p, h in meta["corpus_sha256"].items())
        + " |",
        f"| hygiene | {hygiene.get('removed')} of {hygiene.get('lines')} corpus lines removed "
        f"(benchmark valid/test molecules, canonical SMILES); per task "
        f"{hygiene.get('removed_by_task')} |",
        *_preparation_row(meta.get("corpus_counts")),
        f"| steps | {meta['steps']} (batches of <= {args.get('max_tokens')} padded tokens, "
        f"lr {args.get('lr')}, warm-up {args.get('warmup_steps')}, schedule over "
        f"{args.get('max_steps')} steps, mask ratio {args.get('mask_ratio')}) |",
        f"| tokens seen | {meta['tokens_seen']:,} (unexpanded) |",
        f"| recipe | {_recipe(meta)} |",
        f"| CPU time | {(meta.get('cpu_seconds') or 0) / 3600:.2f} CPU-hours in all "
        f"(process CPU time; started from: {_segments(meta)}) |",
        f"| wall time | {meta['wall_seconds'] / 60:.1f} min on {meta['device']} "
        f"({meta.get('machine', '')}) |",
        f"| samples with no valid DAG path | {meta.get('invalid_paths')} |",
        f"| final validation loss | {valid.get('valid_loss', float('nan')):.4f} "
        f"(step {valid.get('step')}, {valid.get('valid_molecules')} held-out molecules; "
        "ExLM: states-alignment NLL per target, MLM: cross-entropy per masked token) |",
        f"| masked-token accuracy | {valid.get('valid_accuracy', float('nan')):.4f} "
        "(ExLM: argmax of the Viterbi-aligned state) |",
        f"| package / commit | exlm_chem {meta['package_version']} / {meta.get('commit')} |",
    ]


# ------------------------------------------------- frozen-feature probe (issue 30's study)
class StudySources(NamedTuple):
    """Where the frozen-feature section reads its records, and the pooling it leads with.

    Attributes
    ----------
    weights_sha256 : str
        sha256 of the shipped ``models/NAME/model.safetensors``: the study keys its
        records by the weights probed, so only a probe of these very weights counts.
    study : Path
        The study's ``probes.jsonl`` (model, control and descriptor records).
    results : Path
        The benchmark runner's ``results.jsonl`` (RF on ECFP4).
    pooling : {"bos", "mean"}
        The first column's pooling; the control is shown with the same one.
    """

    weights_sha256: str
    study: Path = STUDY_FILE
    results: Path = RUNNER_FILE
    pooling: str = CARD_POOLING


class Column(NamedTuple):
    """One column of the frozen-feature table.

    Attributes
    ----------
    title : str
        Header cell.
    rows : dict or None
        Row label (:data:`STUDY_ROWS`) -> (mean, sample sd over seeds; None for one
        record); None when there are no records (every cell reads "n/a").
    provenance : str
        The line under the table: file, commit, machine and command, or why it is n/a.
    """

    title: str
    rows: dict[str, tuple[float, float | None]] | None
    provenance: str


def _study_records(path: Path) -> list[dict]:
    """The study's records in file order; none when the file is absent."""
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _summary(samples: list[dict[str, float]]) -> dict[str, tuple[float, float | None]]:
    """Row -> (mean, sd) over ``samples`` (task -> ROC-AUC, one per seed or record).

    Each sample's means are taken first (the mean of its five tasks, of its four without
    ClinTox), then averaged over samples: a seed's mean is one draw of the score.
    """
    values: dict[str, list[float]] = {row: [] for row in STUDY_ROWS}
    for sample in samples:
        for task in STUDY_TASKS:
            values[task].append(sample[task])
        values[MEAN_ALL].append(float(np.mean([sample[t] for t in STUDY_TASKS])))
        values[MEAN_NO_CLINTOX].append(
            float(np.mean([sample[t] for t in STUDY_TASKS if t != "clintox"])))
    return {row: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else None)
            for row, v in values.items()}


def _cell(value: tuple[float, float | None] | None) -> str:
    """ROC-AUC x100 with one decimal, "± sd" over seeds where there are several."""
    if value is None:
        return "n/a"
    mean, sd = value
    return f"{100 * mean:.1f}" + ("" if sd is None else f" ± {100 * sd:.1f}")


def _where(records: list[dict]) -> str:
    """Commits and machines of ``records``, each named once, in file order."""
    commits = ", ".join(dict.fromkeys(str(r.get("commit")) for r in records))
    machines = "; ".join(dict.fromkeys(str(r.get("machine")) for r in records))
    return f"commit {commits} on {machines}"


def _model_column(name: str, records: list[dict], sources: StudySources,
                  pooling: str) -> Column:
    """This model's study probe with ``pooling`` (the last record of its weights)."""
    default = " (default)" if pooling == sources.pooling else ""
    title = f"{name}, {pooling} pooling{default}"
    study = _display(sources.study)
    mine = [r for r in records
            if r.get("weights_sha256") == sources.weights_sha256 and r["pooling"] == pooling]
    command = (f"`python {STUDY_SCRIPT} probe models/{name} --arm "
               f"{mine[-1]['arm'] if mine else name} --out {study}`")
    if not mine:
        return Column(title, None, f"{title}: n/a, no record of these weights (sha256 "
                      f"{sources.weights_sha256[:12]}) with {pooling} pooling in {study}; "
                      f"made by {command}.")
    return Column(title, _summary([mine[-1]["roc_auc"]]),
                  f"{title}: {study}, record of `{mine[-1].get('checkpoint')}`, "
                  f"{_where(mine[-1:])}; command: {command}.")


def _control_column(name: str, config: dict, records: list[dict],
                    sources: StudySources) -> Column:
    """Random-init encoders of this d_model (mean ± sd over their seeds), same pooling as
    the first column; of this objective when the file holds one, else of another (said)."""
    d_model, objective = config["d_model"], config.get("objective", "exlm")
    study = _display(sources.study)
    shaped = [r for r in records if r["arm"].startswith(CONTROL_PREFIX)
              and r.get("d_model") == d_model and r["pooling"] == sources.pooling]
    same = [r for r in shaped if r.get("objective") == objective]
    by_seed = {r["control_seed"]: r for r in (same or shaped)}  # a seed re-probed: the last
    seeds = sorted(by_seed)
    title = (f"random-init control, d {d_model}, {sources.pooling} pooling "
             f"({len(seeds)} seed{'s' if len(seeds) != 1 else ''})")
    command = (f"`python {STUDY_SCRIPT} control models/{name} --seeds "
               f"{' '.join(map(str, seeds or [0, 1]))} --out {study}`")
    if not seeds:
        return Column(title, None, f"random-init control: n/a, no record of a random-init "
                      f"encoder with d_model {d_model} and {sources.pooling} pooling in "
                      f"{study}; made by {command}.")
    kept = [by_seed[s] for s in seeds]
    other = "" if same else (f" (objective {kept[0].get('objective')}: the file holds no "
                             f"{objective} control of this width)")
    return Column(title, _summary([r["roc_auc"] for r in kept]),
                  f"random-init control: {study}, arm `{kept[0]['arm']}`{other}, seeds "
                  f"{', '.join(map(str, seeds))}, {_where(kept)}: a random-init encoder with the "
                  "same config as this model (`control` builds it from a checkpoint's "
                  "config.json, descriptor head dropped; matched here by d_model and "
                  "objective, the config fields the records keep), probed the same way: the "
                  f"floor pre-training has to beat; command: {command}.")


def _rf_column(sources: StudySources) -> Column:
    """The benchmark runner's random forest on ECFP4, scaffold split, mean ± sd over the
    seeds that hold all five tasks (a forest's seed changes the trees, not the split)."""
    from exlm_chem.benchmark.records import ResultsFile

    results = _display(sources.results)
    rows = [r for r in ResultsFile(sources.results).latest()
            if r.method == "rf_ecfp4" and r.split == "scaffold" and r.task in STUDY_TASKS]
    by_seed: dict[int, dict[str, float]] = {}
    for r in rows:
        by_seed.setdefault(r.seed, {})[r.task] = r.roc_auc
    seeds = sorted(s for s, tasks in by_seed.items() if set(tasks) >= set(STUDY_TASKS))
    title = f"RF on ECFP4 ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"
    command = (f"`exlm-chem benchmark --tasks {' '.join(STUDY_TASKS)} --seeds "
               f"{' '.join(map(str, seeds or [0, 1, 2]))} --methods rf --out OUT`")
    if not seeds:
        return Column(title, None, f"RF on ECFP4: n/a, no `rf_ecfp4` scaffold-split seed "
                      f"with all of {', '.join(STUDY_TASKS)} in {results}; made by {command}.")
    used = [r for r in rows if r.seed in seeds]
    where = _where([{"commit": r.commit, "machine": r.machine} for r in used])
    return Column(title, _summary([by_seed[s] for s in seeds]),
                  f"RF on ECFP4: {results}, the runner's `rf_ecfp4` cells (100 trees on "
                  f"2048 ECFP4 bits, fitted on the same split's training rows), seeds "
                  f"{', '.join(map(str, seeds))}, {where}; command: {command}.")


def _descriptor_column(records: list[dict], sources: StudySources) -> Column:
    """The study's probe on RDKit 2D descriptors (its last record)."""
    title = "LR on RDKit 2D descriptors"
    study = _display(sources.study)
    command = f"`python {STUDY_SCRIPT} descriptors --out {study}`"
    mine = [r for r in records if r["arm"] == DESCRIPTOR_ARM]
    if not mine:
        return Column(title, None, f"{title}: n/a, no `{DESCRIPTOR_ARM}` record in {study}; "
                      f"made by {command}.")
    record = mine[-1]
    settings = record.get("feature_settings") or {}
    return Column(title, _summary([record["roc_auc"]]),
                  f"{title}: {study}, {record.get('n_features')} descriptors of RDKit "
                  f"{settings.get('rdkit_version')} ({settings.get('feature_scaling')}), "
                  f"then the same standardised logistic regression, {_where([record])}; "
                  f"command: {command}.")


def _frozen_probe_section(name: str, config: dict, sources: StudySources) -> list[str]:
    """Issue 30's judging probe: this model (both poolings) beside its control, RF on
    ECFP4 and LR on descriptors, one row per task and the two means."""
    records = _study_records(sources.study)
    other = next(p for p in POOLINGS if p != sources.pooling)
    columns = [_model_column(name, records, sources, sources.pooling),
               _model_column(name, records, sources, other),
               _control_column(name, config, records, sources),
               _rf_column(sources),
               _descriptor_column(records, sources)]
    lines = [
        "",
        "## Frozen-feature probe (issue 30's study protocol)",
        "",
        f"Test ROC-AUC x100 of `{STUDY_SCRIPT}`: frozen features of the canonical SMILES, "
        "the paper's scaffold split, standardised on the training rows, one logistic "
        "regression per task (C = 1); BBBP, BACE, ClinTox, SIDER, Tox21. Default pooling "
        f"of this card: **{sources.pooling}**. Mean ± sample sd over seeds where a column "
        "has several.",
        "",
        "| task | " + " | ".join(c.title for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for row in STUDY_ROWS:
        cells = [_cell(None if c.rows is None else c.rows[row]) for c in columns]
        label = f"**{row}**" if row in (MEAN_ALL, MEAN_NO_CLINTOX) else row
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    missing = [c.title for c in columns if c.rows is None]
    lines.append("")
    if missing:
        lines += [f"n/a: no records for {'; '.join(missing)} (see below); nothing is filled "
                  "in.", ""]
    lines += [f"- {c.provenance}" for c in columns]
    return lines


# ---------------------------------------------------- probe-mode benchmark (the runner's)
def _runner_pooling(meta: dict) -> str:
    """The pooling of the runner's probe figures: the records' input protocol, else
    ``run_probe``'s; "bos" only for figures that predate both (BOS was the only one)."""
    inputs = (meta.get("probe_source") or {}).get("inputs")
    if isinstance(inputs, str):
        inputs = json.loads(inputs)
    if isinstance(inputs, dict) and inputs.get("pooling"):
        return str(inputs["pooling"])
    return str(meta.get("probe_pooling") or "bos")


def _runner_probe_section(meta: dict, probe: dict, control: dict | None) -> list[str]:
    """The 7-task probe-mode benchmark of the runner (or ``--probe``), one seed; with a
    random-init ``control`` (``--control``) beside it."""
    pooling = _runner_pooling(meta)
    tasks = [t for t in probe if t != "mean_roc_auc"]
    floor = ["random-init encoder ROC-AUC"] if control else []
    lines = [
        "",
        f"## Probe-mode benchmark (frozen {_POOLING_WORDS.get(pooling, pooling)} embedding "
        "+ logistic regression per task; deterministic scaffold split with chirality, test "
        "set; 1 seed)",
        "",
        "| " + " | ".join(["task", "ROC-AUC", "PRC-AUC", *floor, "train / test"]) + " |",
        "|" + "---|" * (4 + len(floor)),
    ]
    for task in tasks:
        r = probe[task]
        cells = [task, f"{r['roc_auc']:.4f}", f"{r['prc_auc']:.4f}"]
        if control:
            cells.append(f"{control.get(task, {}).get('roc_auc', float('nan')):.4f}")
        lines.append("| " + " | ".join([*cells, f"{r['n_train']} / {r['n_test']}"]) + " |")
    mean = ["**mean**", f"**{probe['mean_roc_auc']:.4f}**", ""]
    if control:
        floors = [control[t]["roc_auc"] for t in tasks if t in control]
        floor_mean = f"{np.mean(floors):.4f}" if floors else "n/a"
        if floors and len(floors) < len(tasks):
            floor_mean += f" ({len(floors)} of {len(tasks)} tasks)"
        mean.append(floor_mean)
    lines += ["| " + " | ".join([*mean, ""]) + " |", "", f"Tasks probed: {', '.join(tasks)}."]
    if control:
        lines[-1] += (" The random-init column probes the same `small` architecture with "
                      "random weights (seed 0): the floor a pretrained encoder has to beat.")
    else:  # the study section above holds the control, measured on the same input
        lines[-1] += " The random-init control is in the study section above."
    source = meta.get("probe_source")
    if source:
        lines += [
            "",
            f"Probe figures: {source['where']}, records of commit {source['commit']} on "
            f"{source['machine']}, input {source['inputs']} (protocol version "
            f"{source['version']}); command: `{source['command']}`.",
        ]
        if meta["objective"] == "mlm" and control:
            lines[-1] += (" The random-init column was probed with BOS/EOS expanded to k=2 "
                          "copies (the ExLM input): a floor for comparison, not measured "
                          "with this twin's unexpanded input.")
    return lines


def card(
    name: str, meta: dict, config: dict, probe: dict | None, control: dict | None = None,
    sources: StudySources | None = None,
) -> str:
    """The model card (markdown).

    Parameters
    ----------
    name : str
        The shipped name (``models/NAME``).
    meta, config : dict
        The shipped metadata.json and config.json.
    probe : dict or None
        The runner's probe figures (task -> record, "mean_roc_auc"); None: no section.
    control : dict or None
        A random-init encoder's probe figures, shown beside ``probe``.
    sources : StudySources or None
        Where the frozen-feature section reads its records; None: no section.

    Returns
    -------
    str
    """
    lines = _field_table(name, meta, config)
    if sources is not None:
        lines += _frozen_probe_section(name, config, sources)
    if probe:
        lines += _runner_probe_section(meta, probe, control)
    lines += [
        "",
        "Produced by `python scripts/ship_checkpoint.py` from the run's own metadata; "
        "nothing here is quoted from the paper.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", type=Path, help="pre-training run directory")
    parser.add_argument("--name", required=True)
    parser.add_argument("--status", default="CPU-trained, interim")
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--tasks", nargs="+", default=None)
    parser.add_argument(
        "--control",
        type=Path,
        default=None,
        help="probe results (JSON) of a random-init encoder, shown beside",
    )
    parser.add_argument(
        "--probe-from",
        type=Path,
        default=None,
        help="take the probe figures from a benchmark results.jsonl (this model's seed-0 "
        "probe records) instead of running the probe; with --card-only",
    )
    parser.add_argument(
        "--command",
        default="",
        help="with --probe-from: the command that wrote those records (for the card)",
    )
    parser.add_argument(
        "--card-only",
        action="store_true",
        help="rewrite MODEL_CARD.md from the shipped metadata.json",
    )
    parser.add_argument(
        "--study",
        type=Path,
        default=STUDY_FILE,
        help="the CPU study's probes.jsonl (benchmarks/pretraining/pretrain_cpu_study.py): this "
        "model's, the controls' and the descriptors' records",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RUNNER_FILE,
        help="the benchmark runner's results.jsonl holding the rf_ecfp4 cells",
    )
    parser.add_argument(
        "--pooling",
        choices=POOLINGS,
        default=CARD_POOLING,
        help="the card's default pooling: first column of the frozen-feature table (and "
        "its control); with --probe, the pooling the probe-mode benchmark embeds with",
    )
    args = parser.parse_args()

    out = REPO / "models" / args.name
    control = json.loads(args.control.read_text()) if args.control else None
    if args.card_only:
        if args.probe_from:
            probe_from_results(out, args.probe_from, args.command)
        _, config, saved = load_checkpoint(out)
        text = card(args.name, saved, config.to_dict(), saved.get("probe"), control,
                    _sources(out, args))
        (out / "MODEL_CARD.md").write_text(text)
        print(text)
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO).stdout.strip()  # fmt: skip
    extra = {
        "status": args.status,
        "commit": commit,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
    }
    copy_checkpoint(args.run / "checkpoint", out, metadata=extra)
    if args.probe:
        from exlm_chem.data.moleculenet import dataset_names

        extra["probe"] = run_probe(out, args.tasks or list(dataset_names()), args.pooling)
        extra["probe_pooling"] = args.pooling  # the card's heading names it
        copy_checkpoint(args.run / "checkpoint", out, metadata=extra)
    config = load_checkpoint(out)[1]
    saved = json.loads((out / "metadata.json").read_text())
    text = card(args.name, saved, config.to_dict(), extra.get("probe"), control,
                _sources(out, args))
    (out / "MODEL_CARD.md").write_text(text)
    print(text)


def _sources(out: Path, args: argparse.Namespace) -> StudySources:
    """The frozen-feature section's inputs for the weights shipped in ``out``."""
    return StudySources(_sha256(out / "model.safetensors"), args.study, args.results,
                        args.pooling)


if __name__ == "__main__":
    main()
