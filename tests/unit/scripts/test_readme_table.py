"""The README's classification table (scripts/readme_table.py) from a fake summary.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from repo_scripts import load_script

readme_table = load_script("scripts/readme_table.py")


def _summary(folder: Path, cells: dict[str, list[str]]) -> Path:
    rows = [{"label": label, "task": task, "roc_auc_mean": 0.70 + 0.01 * i,
             "roc_auc_std": 0.005, "n_seeds": 1 if task == "muv" else 3}
            for label, tasks in cells.items() for i, task in enumerate(tasks)]
    pd.DataFrame(rows).to_csv(folder / "summary.csv", index=False)
    return folder


def test_one_mean_column_once_the_compared_rows_have_every_task(tmp_path):
    compared = readme_table.COMPARED
    text = readme_table.table([_summary(tmp_path, {label: readme_table.TASKS
                                                  for label in compared})])
    head, rule, first = text.splitlines()[:3]
    assert "mean of 7" in head and "mean of these" not in head
    assert head.count("|") == rule.count("|") == first.count("|")
    # the mean of 0.70, 0.71, ..., 0.76 and the seeds of MUV (1) and the rest (3)
    assert first.split(" | ")[-2:] == ["73.0", "1/3 |"]


def test_two_mean_columns_while_a_compared_row_misses_tasks(tmp_path):
    compared = readme_table.COMPARED
    cells = {label: readme_table.TASKS for label in compared}
    cells[compared[0]] = readme_table.TASKS[:5]  # the estimator's row is not complete yet
    lines = readme_table.table([_summary(tmp_path, cells)]).splitlines()
    assert "mean of these 5" in lines[0] and "mean of 7" in lines[0]
    estimator = lines[2].split(" | ")
    assert estimator[-3:] == ["72.0", "–", "3 |"]  # its five tasks' mean, no 7-task mean
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_rows_come_from_several_folders_and_the_first_folder_wins(tmp_path):
    newer, older = tmp_path / "newer", tmp_path / "older"
    newer.mkdir(), older.mkdir()
    current, *peers = readme_table.COMPARED
    _summary(newer, {current: ["bace"]})
    _summary(older, {current: ["bbbp", "bace"], **{peer: ["bace"] for peer in peers}})
    lines = readme_table.table([newer, older]).splitlines()
    assert "mean of these 1" in lines[0]
    estimator = lines[2].split(" | ")
    # BACE from the first folder (0.70), BBBP only in the second (0.70 there too: its first
    # task), BACE's mean over the one shared task
    assert estimator[1:3] == ["70.0 ± 0.5", "70.0 ± 0.5"]
    assert estimator[-3] == "70.0"
