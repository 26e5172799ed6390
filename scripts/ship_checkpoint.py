"""Turn a pre-training run into a shipped checkpoint under models/, with its model card.

    python scripts/ship_checkpoint.py --run RUN_DIR --name exlm-small [--probe]

Writes ``models/NAME/`` (config.json, 16-bit model.safetensors, vocab.txt, metadata.json)
and ``models/NAME/MODEL_CARD.md`` from the run's measured metadata. With ``--probe`` it
also runs the probe-mode benchmark (frozen embeddings + logistic regression per task,
scaffold split) on the 7 MoleculeNet tasks and records the results in both files.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from exlm_chem.model.checkpoint import copy_checkpoint, load_checkpoint

REPO = Path(__file__).resolve().parents[1]


def run_probe(model_dir: Path, names: list[str]) -> dict:
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.splits import scaffold_split
    from exlm_chem.embedding import Embedder, embed
    from exlm_chem.train.probe import probe_dataset

    embedder = Embedder.from_checkpoint(model_dir, device="cpu")
    results = {}
    for name in names:
        start = time.monotonic()
        data = load_moleculenet(name)
        vectors, valid = embed(data.smiles, model=embedder, batch_size=128)
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
    meta["probe_source"] = {"where": str(results.relative_to(REPO)) if results.is_absolute()
                            and results.is_relative_to(REPO) else str(results),
                            "commit": first[0], "machine": first[1], "inputs": first[2],
                            "version": first[3], "command": command}
    (out / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")


def _recipe(meta: dict) -> str:
    """Objective, mask ratio, auxiliary descriptor weight, width and dropout of the run."""
    recipe = meta.get("recipe")
    if not recipe:
        return "not recorded (trained before recipes were recorded)"
    aux = (f"descriptor auxiliary loss x{recipe['aux_weight']} "
           f"({(meta.get('descriptors') or {}).get('count')} RDKit 2D descriptors, scaler in "
           "metadata.json)" if recipe.get("aux_weight") else "no auxiliary loss")
    return (f"objective {recipe['objective']}, mask ratio {recipe['mask_ratio']}, {aux}, "
            f"d_model {recipe['d_model']}, k {recipe['k_states']}, dropout "
            f"{recipe.get('dropout')}")


def _segments(meta: dict) -> str:
    """The runs this one started from (``--init-from``), oldest first."""
    lineage = meta.get("lineage") or []
    return "; ".join(f"{s['init_from']} ({s['tokens_seen']:,} tokens, "
                     f"{(s.get('cpu_seconds') or 0) / 3600:.2f} CPU-hours)"
                     for s in lineage) or "none"


def card(
    name: str, meta: dict, config: dict, probe: dict | None, control: dict | None = None
) -> str:
    args = meta.get("pretrain_args", {})
    valid = meta.get("last_validation") or {}
    hygiene = meta.get("hygiene", {})
    lines = [
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
    if probe:
        lines += [
            "",
            "## Probe-mode benchmark (frozen BOS embedding + logistic regression per "
            "task; deterministic scaffold split with chirality, test set; 1 seed)",
            "",
            "| task | ROC-AUC | PRC-AUC | random-init encoder ROC-AUC | train / test |",
            "|---|---|---|---|---|",
        ]
        control = control or {}
        for task, r in probe.items():
            if isinstance(r, dict):
                floor = control.get(task, {}).get("roc_auc", float("nan"))
                lines.append(
                    f"| {task} | {r['roc_auc']:.4f} | {r['prc_auc']:.4f} | {floor:.4f} | "
                    f"{r['n_train']} / {r['n_test']} |"
                )
        tasks = [t for t in probe if t != "mean_roc_auc"]
        floors = [control[t]["roc_auc"] for t in tasks if t in control]
        floor_mean = f"{np.mean(floors):.4f}" if floors else "n/a"
        if floors and len(floors) < len(tasks):
            floor_mean += f" ({len(floors)} of {len(tasks)} tasks)"
        lines.append(f"| **mean** | **{probe['mean_roc_auc']:.4f}** | | {floor_mean} | |")
        lines += [
            "",
            f"Tasks probed: {', '.join(t for t in probe if t != 'mean_roc_auc')}. The "
            "random-init column probes the same `small` architecture with random weights "
            "(seed 0): the floor a pretrained encoder has to beat.",
        ]
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
    args = parser.parse_args()

    out = REPO / "models" / args.name
    control = json.loads(args.control.read_text()) if args.control else None
    if args.card_only:
        if args.probe_from:
            probe_from_results(out, args.probe_from, args.command)
        _, config, saved = load_checkpoint(out)
        text = card(args.name, saved, config.to_dict(), saved.get("probe"), control)
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

        extra["probe"] = run_probe(out, args.tasks or list(dataset_names()))
        copy_checkpoint(args.run / "checkpoint", out, metadata=extra)
    config = load_checkpoint(out)[1]
    saved = json.loads((out / "metadata.json").read_text())
    text = card(args.name, saved, config.to_dict(), extra.get("probe"), control)
    (out / "MODEL_CARD.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
