"""Print the README's one classification table from the summary.csv of benchmark folders.

Rows are the estimator's current and previous defaults and the peers at their own
defaults; cells are test ROC-AUC x100, mean ± std over the seeds each row has, "–" where a
row has no cell yet. The means are over the tasks the current defaults and their two peers
(:data:`COMPARED`) all have, for each row that has them too, and over all seven for a row
that has them. A label found in several folders takes the first folder's cells. Usage::

    python scripts/readme_table.py benchmarks/results/moleculenet_scaffold/exlm-defaults-054 \
        benchmarks/results/moleculenet_scaffold/exlm-defaults-051 \
        benchmarks/results/moleculenet_scaffold
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

CURRENT = "ExLM exlm-small (estimator 0.5.4 defaults)"
TASKS = ["bace", "bbbp", "clintox", "sider", "tox21", "toxcast", "muv"]
TITLES = {"bace": "BACE", "bbbp": "BBBP", "clintox": "ClinTox", "sider": "SIDER",
          "tox21": "Tox21", "toxcast": "ToxCast", "muv": "MUV"}
ROWS = [  # (label in the report, name in the README)
    (CURRENT,
     "**`ExLMMoleculeClassifier()`** (0.5.4: the network and the trees mixed in log-odds; "
     "0.5.5, the current defaults, fits the same on these tasks, where none chooses the "
     "trees' weight; [records](benchmarks/results/moleculenet_scaffold/exlm-defaults-054/"
     "report.md))"),
    ("ExLM exlm-small (estimator 0.5.1 defaults)",
     "`ExLMMoleculeClassifier()` (0.5.1, whose classifier 0.5.3 kept: [records]"
     "(benchmarks/results/moleculenet_scaffold/exlm-defaults-051/report.md))"),
    ("ExLM exlm-small (estimator 0.3.0 defaults)", "`ExLMMoleculeClassifier()` (0.3.0)"),
    # 0.4.0 kept 0.3.0's classifier (exlm_chem.benchmark.report_tdc.SAME_CLASSIFIER)
    ("ExLM exlm-small (estimator 0.4.0 defaults, pretrained=None)",
     "the same from random weights (`pretrained=None`): what pre-training buys"),
    ("chemprop 2.2.4 + RDKit 2D", "chemprop 2.2.4 + RDKit 2D, its defaults (50 epochs)"),
    ("RF on RDKit 2D", "random forest on RDKit 2D"),
    ("RF on ECFP4", "random forest on ECFP4"),
    ("GBT on Morgan counts + RDKit 2D", "gradient boosting on Morgan counts + RDKit 2D"),
    ("ExLM exlm-small (estimator 0.2.0 defaults)", "`ExLMMoleculeClassifier()` (0.2.0)"),
    ("ExLM exlm-small (estimator defaults)", "`ExLMMoleculeClassifier()` (0.1.0)"),
]
#: the rows whose shared tasks the means are over: the current defaults and the peers
#: they must match (issue 48's comparison)
COMPARED = (CURRENT, "chemprop 2.2.4 + RDKit 2D", "RF on RDKit 2D")


def _cell(part: pd.DataFrame, task: str) -> str:
    if task not in part.index:
        return "–"
    mean, std = 100 * part.at[task, "roc_auc_mean"], 100 * part.at[task, "roc_auc_std"]
    return f"{mean:.1f}" if part.at[task, "n_seeds"] == 1 else f"{mean:.1f} ± {std:.1f}"


def table(folders: Sequence[Path]) -> str:
    """The Markdown table of :data:`ROWS` from the folders' ``summary.csv`` files."""
    summary = pd.concat([pd.read_csv(Path(folder) / "summary.csv") for folder in folders])
    summary = summary.drop_duplicates(["label", "task"])  # the first folder's cells
    common = [t for t in TASKS if all(
        ((summary["label"] == label) & (summary["task"] == t)).any() for label in COMPARED)]
    # one mean column once the compared rows have every task
    means = ["mean of 7"] if len(common) == len(TASKS) else [
        f"mean of these {len(common)}", "mean of 7"]
    head = ["row", *(TITLES[t] for t in TASKS), *means, "seeds"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for label, name in ROWS:
        part = summary[summary["label"] == label].set_index("task")
        cells = [_cell(part, t) for t in TASKS]
        mean = (f"{100 * part.loc[common, 'roc_auc_mean'].mean():.1f}"
                if common and set(common) <= set(part.index) else "–")
        full = (f"{100 * part.loc[TASKS, 'roc_auc_mean'].mean():.1f}"
                if set(TASKS) <= set(part.index) else "–")
        seeds = "/".join(sorted({str(n) for n in part["n_seeds"]}))
        row_means = [full] if len(means) == 1 else [mean, full]
        lines.append("| " + " | ".join([name, *cells, *row_means, seeds]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([Path(arg) for arg in sys.argv[1:]]))
