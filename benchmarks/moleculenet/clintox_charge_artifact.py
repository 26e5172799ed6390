"""How far ClinTox can be solved without chemistry: the protonation-state artifact.

In the MoleculeNet ClinTox file most FDA-approved, non-toxic molecules are written in a
charged (protonated/salt) form and almost none of the failed-trial molecules are, so
"does the SMILES contain a formal charge" already ranks both tasks on the test split.
Any model that sees the SMILES (or charges in the graph) can pick this up; read ClinTox
ROC-AUCs with that in mind.

Usage: ``python benchmarks/moleculenet/clintox_charge_artifact.py [--data DIR]``
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.metrics import roc_auc_score

from exlm_chem.benchmark.tasks import load_task


def charged(smiles: str) -> bool:
    """A formal charge written in the SMILES: ``[NH3+]``, ``[O-]``, ``[N+](=O)[O-]``..."""
    return "+" in smiles or "-]" in smiles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="MoleculeNet folder")
    args = parser.parse_args()
    data = load_task("clintox", "scaffold", 0, args.data)
    print("| part | molecules | task | positives | charged among positives | "
          "charged among negatives | ROC-AUC of the charge flag alone |")
    print("|---|---|---|---|---|---|---|")
    for part in ("train", "test"):
        rows = getattr(data, part)
        flag = np.array([charged(data.smiles[i]) for i in rows])
        for t, task in enumerate(("FDA_APPROVED", "CT_TOX")):
            y = data.labels[rows, t]
            # approved drugs are the charged ones: the flag scores FDA_APPROVED, its negation CT_TOX
            score = flag if task == "FDA_APPROVED" else ~flag
            print(f"| {part} | {len(rows)} | {task} | {int(y.sum())} | "
                  f"{flag[y == 1].mean():.2f} | {flag[y == 0].mean():.2f} | "
                  f"{roc_auc_score(y, score):.3f} |")


if __name__ == "__main__":
    main()
