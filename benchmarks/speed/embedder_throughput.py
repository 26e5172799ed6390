"""Throughput of ``ExLMEmbedder.transform`` beside ``exlm_chem.embed`` on the same model.

What the scikit-learn transformer costs on top of the function it wraps: its parameter
and input checks and the per-process model cache lookup. Three runners embed the same
molecules with the same checkpoint, batch size and threads, timed in alternating rounds in
one process (``_side_by_side.alternate``; on a shared CPU separate runs are not comparable):

- ``transform``: ``ExLMEmbedder(model).transform(smiles)`` (a fresh estimator per call,
  as a clone in a grid search is; the weights come from the cache);
- ``embed``: ``embed(smiles, model=<loaded MoleculeModel>)``, the same forward passes;
- ``embed_path`` (``--with-load``): ``embed(smiles, model=<path>)``, which loads the
  checkpoint on every call, what the cache saves.

Each call embeds all ``--n`` molecules (RDKit check and canonical form, tokenising,
length-bucketed batches, forward passes). Fp32, CPU, eval mode.

Usage::

    python benchmarks/speed/embedder_throughput.py --n 2048 --threads 1 2 --rounds 5 \\
        --json /tmp/embedder.json --out RESULT.md
    python benchmarks/speed/embedder_throughput.py --n 50 --threads 1 --rounds 2   # smoke run
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

from _side_by_side import alternate, provenance, read_smiles, shared_data, summarise

from exlm_chem.provenance import load_average


def build(model: str, batch_size: int, with_load: bool) -> dict:
    """Runners ``name -> f(smiles) -> [N, d]``, all on ``model`` on the CPU."""
    from exlm_chem import ExLMEmbedder
    from exlm_chem.embedding import cached_model, embed

    loaded = cached_model(model, "cpu")  # the one the transformer's cache hands out

    def transform(smiles):
        return ExLMEmbedder(model, batch_size=batch_size, device="cpu").transform(smiles)

    def embed_loaded(smiles):
        return embed(smiles, model=loaded, batch_size=batch_size).embeddings

    runners = {"transform": transform, "embed": embed_loaded}
    if with_load:
        def embed_path(smiles):
            return embed(smiles, model=model, batch_size=batch_size, device="cpu").embeddings

        runners["embed_path"] = embed_path
    return runners


def measure(args: argparse.Namespace) -> list[dict]:
    import numpy as np
    import torch

    smiles = read_smiles(args.corpus, args.n)
    runners = build(args.model, args.batch_size, args.with_load)
    rows = []
    for n_threads in args.threads:
        torch.set_num_threads(n_threads)
        outputs = {name: run(smiles) for name, run in runners.items()}  # warm-up
        reference = outputs["embed"]
        for name, out in outputs.items():  # the same rows, or the timing means nothing
            np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-5, err_msg=name)
        rates = alternate(runners, [smiles], [len(smiles)], args.rounds)
        row = {"threads": n_threads, **summarise(rates, "transform", "embed")}
        if "embed_path" in rates:
            row["embed_path_mol_per_s"] = statistics.median(rates["embed_path"])
        rows.append(row)
        print(f"{n_threads} thread(s): transform / embed {row['ratio']:.3f}", file=sys.stderr)
    return rows


def markdown(run: dict) -> str:
    p = run["provenance"]
    lines = [f"# ExLMEmbedder.transform vs embed ({run['n']} MOSES molecules per call, "
             f"batch {run['batch_size']}, model {run['model']})", "",
             f"- exlm_chem at commit {p['commit']} ({p['exlm_chem_checkout']}); "
             f"{p['machine']}, {p['cores']} cores; torch {p['torch']}; load average "
             f"{p['load_average_start']} at start, {run['load_average_end']} at end",
             f"- command: `{p['command']}`", "",
             "| threads | transform mol/s | embed mol/s | transform / embed (median of "
             "rounds; min-max) | embed with a load per call mol/s | rounds |",
             "|---|---|---|---|---|---|"]
    for row in run["rows"]:
        with_load = row.get("embed_path_mol_per_s")
        lines.append(
            f"| {row['threads']} | {row['transform_mol_per_s']:.1f} | "
            f"{row['embed_mol_per_s']:.1f} | **{row['ratio']:.3f}** "
            f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f}) | "
            f"{'-' if with_load is None else f'{with_load:.1f}'} | {row['rounds']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2048, help="molecules per call")
    parser.add_argument("--model", default="default",
                        help="checkpoint directory or 'default' (models/exlm-small)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per runner")
    parser.add_argument("--with-load", action="store_true",
                        help="also time embed(model=<path>), which loads the model per call")
    parser.add_argument("--corpus", default=str(shared_data() / "pretrain" / "moses_test.smi.gz"))
    parser.add_argument("--json", help="save this run (figures and provenance) here")
    parser.add_argument("--out", help="write the markdown table here")
    args = parser.parse_args(argv)
    command = "python benchmarks/speed/embedder_throughput.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    run = {"provenance": provenance(command), "n": args.n, "batch_size": args.batch_size,
           "model": args.model, "rows": measure(args), "load_average_end": load_average()}
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    table = markdown(run)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
