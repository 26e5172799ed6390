"""CPU time per molecule of each computed feature kind, and of Mordred's 2D descriptors.

The estimators' tree head reads MapLight's kinds; a further descriptor set is worth its
valid-part gain only if a fit stays a laptop's (a BBBP default fit: at most 4 CPU-minutes).
This times every kind of :data:`exlm_chem.data.descriptors.COMPUTED_KINDS` on the same
BBBP molecules in one process (one thread, in-process, parse included), and Mordred's 2D
descriptors (``mordredcommunity``'s ``Calculator(descriptors, ignore_3D=True)``) on the
first ``--mordred`` of them where it is importable (it is not a dependency), side by side.

    python benchmarks/speed/feature_set_cost.py --molecules 1000 --mordred 200 \
        --out benchmarks/results/feature_set_cost_cpu.md
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from exlm_chem.provenance import cpu_model, git_commit, load_average


def _bbbp_smiles(n: int) -> list[str]:
    from exlm_chem.data.moleculenet import load_moleculenet

    return list(load_moleculenet("bbbp", path=os.environ.get("EXLM_CHEM_DATA")).smiles[:n])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--molecules", type=int, default=1000)
    parser.add_argument("--mordred", type=int, default=200, help="molecules Mordred times")
    parser.add_argument("--out", type=Path, help="a markdown file for the table")
    args = parser.parse_args()

    from exlm_chem.data.descriptors import COMPUTED_KINDS, descriptor_values

    smiles = _bbbp_smiles(args.molecules)
    rows = []
    for kind in COMPUTED_KINDS:
        began = time.process_time()
        values, _ = descriptor_values(kind, smiles, n_jobs=1)
        cpu = time.process_time() - began
        rows.append((kind, values.shape[1], len(smiles), cpu))
    try:
        from mordred import Calculator, descriptors
        from rdkit import Chem
    except ImportError:
        print("mordred is not importable: not timed (pip install mordredcommunity)")
    else:
        calculator = Calculator(descriptors, ignore_3D=True)
        some = smiles[: args.mordred]
        began = time.process_time()
        for text in some:
            molecule = Chem.MolFromSmiles(text)
            if molecule is not None:
                calculator(molecule)
        rows.append(("mordred (2D)", len(calculator.descriptors), len(some),
                     time.process_time() - began))
    lines = [f"Commit {git_commit()}, {cpu_model()} ({platform.machine()}), "
             f"load average {load_average()} at the start; one process, one thread; BBBP's "
             f"first molecules (MoleculeNet order), parse included.",
             "", "Reproduce: `python benchmarks/speed/feature_set_cost.py --molecules "
             f"{args.molecules} --mordred {args.mordred}`", "",
             "| kind | columns | molecules | CPU-ms per molecule | CPU-s for BBBP's 2,039 |",
             "|---|---:|---:|---:|---:|"]
    for kind, width, n, cpu in rows:
        per = cpu / n
        lines.append(f"| {kind} | {width} | {n} | {1000 * per:.2f} | {2039 * per:.0f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
