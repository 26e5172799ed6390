"""Per-molecule CPU time of each RDKit 2D descriptor, to choose the fast target set.

Pre-training's molecule-level target must be computable for the whole corpus (1.87M
molecules) in CPU-minutes, here and on a GPU host's cores. This times every descriptor
of ``rdkit.Chem.Descriptors._descList`` on the same parsed molecules (one process, one
thread), and the parse itself, and writes a table sorted by cost plus the total of the
``fast`` set that :mod:`exlm_chem.data.descriptors` defines, measured in the same run.

    python benchmarks/pretraining/descriptor_cost.py --molecules 2000 \
        --out benchmarks/results/descriptor_cost
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from exlm_chem.data.corpus import read_smiles_file
from exlm_chem.provenance import git_commit, load_average

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared/data/pretrain/chembl_mix.smi.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, nargs="+",
                        default=[DEFAULT_CORPUS, DEFAULT_CORPUS.with_name("moses_train.smi.gz")])
    parser.add_argument("--molecules", type=int, default=2000, help="per corpus file")
    parser.add_argument("--out", type=Path, help="folder for cost.md and cost.json")
    args = parser.parse_args()

    from rdkit import Chem, rdBase
    from rdkit.Chem import Descriptors

    from exlm_chem.data.descriptors import FAST_NAMES, descriptor_values, rdkit_version

    smiles = [s for f in args.corpus for s in read_smiles_file(f, limit=args.molecules)]
    t0 = time.process_time()
    with rdBase.BlockLogs():
        mols = [Chem.MolFromSmiles(s) for s in smiles]
    parse = (time.process_time() - t0) / len(smiles)
    mols = [m for m in mols if m is not None]
    cost = {}
    with rdBase.BlockLogs():
        for name, fn in Descriptors._descList:
            start = time.process_time()
            for mol in mols:
                try:
                    fn(mol)
                except Exception:  # timing only: a failure costs what it cost
                    pass
            cost[name] = (time.process_time() - start) / len(mols)
    start = time.process_time()
    descriptor_values("rdkit2d_fast", smiles, n_jobs=1)
    fast_total = (time.process_time() - start) / len(smiles)

    total = sum(cost.values())
    rows = sorted(cost.items(), key=lambda kv: -kv[1])
    header = [
        f"# Per-molecule CPU time of RDKit's 2D descriptors (RDKit {rdkit_version()})",
        "",
        f"- commit {git_commit()}, {platform.processor() or platform.machine()}, one process, "
        f"process CPU time; {len(mols)} molecules: the first {args.molecules} of each of "
        + ", ".join(p.name for p in args.corpus),
        "- command: `python benchmarks/pretraining/descriptor_cost.py --molecules "
        f"{args.molecules} --out {args.out}`",
        f"- load average at the end: {load_average()} (2 cores)",
        "- each descriptor is timed in `_descList` order on the same parsed molecules: one "
        "that reuses work cached on the molecule by an earlier one (Crippen contributions, "
        "Gasteiger charges, EState indices, BCUT) shows only its remainder; the `fast` "
        "total is timed apart, on freshly parsed molecules",
        f"- parse (MolFromSmiles): {parse * 1e6:.0f} µs per molecule",
        f"- all {len(cost)} descriptors: {total * 1e3:.2f} ms per molecule",
        f"- the `fast` set ({len(FAST_NAMES)} descriptors, parse included, "
        f"`descriptor_values('rdkit2d_fast')`): {fast_total * 1e3:.3f} ms per molecule, "
        f"{fast_total * 1.87e6 / 60:.0f} CPU-minutes for 1.87M molecules",
        "",
        "| descriptor | µs per molecule | share of all | in `fast` |",
        "|---|---:|---:|:---:|",
    ]
    lines = [f"| {n} | {c * 1e6:.1f} | {c / total:.1%} | {'x' if n in FAST_NAMES else ''} |"
             for n, c in rows]
    text = "\n".join(header + lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "cost.md").write_text(text)
        (args.out / "cost.json").write_text(json.dumps(
            {"commit": git_commit(), "rdkit": rdkit_version(), "molecules": len(mols),
             "parse_s": parse, "fast_total_s": fast_total,
             "per_descriptor_s": dict(rows)}, indent=1))
    assert np.isfinite(total)


if __name__ == "__main__":
    main()
