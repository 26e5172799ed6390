"""Print the README's one classification table from a benchmark folder's summary.csv.

Rows are the estimator's current and previous defaults and the peers at their own
defaults; cells are test ROC-AUC x100, mean ± std over the seeds each row has, "–" where a
row has no cell yet. The means are over the tasks the estimator and its two peers (the
first three rows) all have, for each row that has them too, and over all seven for a row
that has them. Usage::

    python scripts/readme_table.py benchmarks/results/moleculenet_scaffold
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

# the release whose classifier defaults are today's (0.3.0 added the forest member), and
# the earlier defaults, kept as rows of their own
CLASSIFIER_DEFAULTS = "0.3.0"
PREVIOUS_DEFAULTS = "0.2.0"
TASKS = ["bace", "bbbp", "clintox", "sider", "tox21", "toxcast", "muv"]
TITLES = {"bace": "BACE", "bbbp": "BBBP", "clintox": "ClinTox", "sider": "SIDER",
          "tox21": "Tox21", "toxcast": "ToxCast", "muv": "MUV"}
COMPARED = 3  # the first rows: the estimator and the peers it must match
ROWS = [  # (label in the report, name in the README)
    (f"ExLM exlm-small (estimator {CLASSIFIER_DEFAULTS} defaults)",
     f"**`ExLMMoleculeClassifier()`** ({CLASSIFIER_DEFAULTS}, the current defaults)"),
    ("chemprop 2.2.4 + RDKit 2D", "chemprop 2.2.4 + RDKit 2D, its defaults (50 epochs)"),
    ("RF on RDKit 2D", "random forest on RDKit 2D"),
    ("RF on ECFP4", "random forest on ECFP4"),
    ("GBT on Morgan counts + RDKit 2D", "gradient boosting on Morgan counts + RDKit 2D"),
    (f"ExLM exlm-small (estimator {PREVIOUS_DEFAULTS} defaults)",
     f"`ExLMMoleculeClassifier()` ({PREVIOUS_DEFAULTS})"),
    ("ExLM exlm-small (estimator defaults)", "`ExLMMoleculeClassifier()` (0.1.0)"),
]


def _cell(part: pd.DataFrame, task: str) -> str:
    if task not in part.index:
        return "–"
    mean, std = 100 * part.at[task, "roc_auc_mean"], 100 * part.at[task, "roc_auc_std"]
    return f"{mean:.1f}" if part.at[task, "n_seeds"] == 1 else f"{mean:.1f} ± {std:.1f}"


def table(folder: Path) -> str:
    summary = pd.read_csv(folder / "summary.csv")
    # the tasks the estimator and the two peers of issue 48's comparison all have
    common = [t for t in TASKS if all(
        ((summary["label"] == label) & (summary["task"] == t)).any()
        for label, _ in ROWS[:COMPARED])]
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
    print(table(Path(sys.argv[1])))
