"""The benchmark report: exact aggregates, table cells, quoted paper rows and the files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.benchmark.records import CellRecord, ResultsFile
from exlm_chem.benchmark.report import (
    chart_data,
    markdown_report,
    plot_report,
    write_cells_csv,
    write_csv,
    write_report,
)
from exlm_chem.benchmark.report_plot import CHANCE, y_floor
from exlm_chem.benchmark.report_summary import TASKS, paper_table, summarize

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXLM = "ExLM tiny (finetune)"
RF = "RF ECFP4"


def cell(label: str, task: str, seed: int, roc: float, *, prc: float = 0.5,
         split: str = "scaffold", wall: float = 10.0, epochs: int | None = 5,
         budget: dict | None = None, method: str = "exlm", mode: str = "finetune",
         stopped_early: bool = False) -> CellRecord:
    return CellRecord(
        method=method, label=label, model="tiny@0123456789ab" if method == "exlm" else None,
        mode=mode, task=task, seed=seed, split=split, roc_auc=roc, prc_auc=prc,
        n_tasks_scored=1, per_task_roc_auc=[roc, None], n_train=80, n_valid=10, n_test=10,
        epochs=epochs, best_epoch=epochs, stopped_early=stopped_early,
        budget={"max_epochs": 5, "max_minutes": 3.0} if budget is None else budget,
        settings={"lr": 1e-4}, wall_s=wall, commit="abc1234", machine="test-box",
        finished_at="2025-01-01T00:00:00+00:00")


@pytest.fixture()
def records() -> list[CellRecord]:
    return [
        cell(EXLM, "bace", 0, 0.80, wall=10.0),
        cell(EXLM, "bace", 1, 0.70, wall=20.0, stopped_early=True),
        # MUV given out of Table 1 order and seed order on purpose
        cell(EXLM, "muv", 2, 0.80, prc=0.30, epochs=3),
        cell(EXLM, "muv", 0, 0.60, prc=0.10, epochs=4),
        cell(EXLM, "muv", 1, 0.70, prc=0.20, epochs=5),
        cell(RF, "muv", 0, 0.50, method="rf_ecfp4", mode="supervised", epochs=None, budget={}),
        cell(RF, "muv", 1, 0.50, method="rf_ecfp4", mode="supervised", epochs=None, budget={}),
        cell(RF, "bace", 0, 0.90, method="rf_ecfp4", mode="supervised", epochs=None, budget={}),
    ]


def table_row(markdown: str, label: str) -> list[str]:
    """The cells of the markdown table row whose first cell is ``label``."""
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in\n{markdown}")


def main_table(markdown: str) -> str:
    return markdown.split("## Test ROC-AUC")[1].split("## Wall time")[0]


def test_summary_aggregates_exactly(records):
    frame = summarize(records)
    assert list(zip(frame["label"], frame["task"], strict=True)) == [
        (EXLM, "bace"), (EXLM, "muv"), (RF, "bace"), (RF, "muv")]
    row = frame.iloc[0]
    assert row["roc_auc_mean"] == pytest.approx(0.75)
    assert row["roc_auc_std"] == pytest.approx(math.sqrt(0.005))  # ddof=1 of 0.8, 0.7
    assert (row["n_seeds"], row["seeds"]) == (2, "0 1")
    assert (row["wall_s_mean"], row["wall_s_max"]) == (15.0, 20.0)
    assert row["n_stopped_early"] == 1
    assert row["budget"] == "max epochs 5, max minutes 3"
    assert (row["commit"], row["machine"], row["split"]) == ("abc1234", "test-box", "scaffold")
    assert row["model"] == "tiny@0123456789ab"
    muv = frame.iloc[1]
    assert muv["seeds"] == "0 1 2"
    assert muv["roc_auc_mean"] == pytest.approx(0.70)
    assert muv["roc_auc_std"] == pytest.approx(0.10)
    assert muv["prc_auc_mean"] == pytest.approx(0.20)
    assert muv["prc_auc_std"] == pytest.approx(0.10)
    assert muv["epochs_mean"] == pytest.approx(4.0)
    rf_bace = frame.iloc[2]
    assert rf_bace["n_seeds"] == 1 and math.isnan(rf_bace["roc_auc_std"])
    assert math.isnan(rf_bace["epochs_mean"])
    assert rf_bace["budget"] == "none"
    assert (rf_bace["method"], rf_bace["mode"], rf_bace["model"]) == (
        "rf_ecfp4", "supervised", "")
    assert frame.iloc[3]["roc_auc_std"] == 0.0


def test_summary_rejects_mixed_splits_and_repeated_seeds(records):
    with pytest.raises(ValueError, match="different splits"):
        summarize([*records, cell(EXLM, "bace", 2, 0.75, split="random")])
    with pytest.raises(ValueError, match=r"seed\(s\) \[0\]"):
        summarize([*records, cell(EXLM, "bace", 0, 0.75, budget={"max_epochs": 9})])


def test_markdown_cells(records):
    text = markdown_report(records, include_paper=False)
    header = table_row(text, "Method")
    assert header[:10] == ["BACE", "BBBP", "Tox21", "SIDER", "MUV", "ClinTox", "ToxCast",
                           "Mean", "Mean w/o ClinTox", "MUV PRC-AUC"]
    exlm = table_row(text, EXLM)
    assert exlm[0] == "75.0 ± 7.1"
    assert exlm[1] == "–"
    assert exlm[4] == "70.0 ± 10.0"
    assert exlm[7] == "72.5 (2/7)"
    assert exlm[8] == "72.5 (2/6)"
    assert exlm[9] == "20.0 ± 10.0"
    rf = table_row(text, RF)
    assert rf[0] == "90.0 (n=1)"
    assert rf[4] == "50.0 ± 0.0"
    assert rf[7] == "70.0 (2/7)"
    assert rf[9] == "50.0 ± 0.0"
    assert "(quoted, Table 1)" not in main_table(text)


def test_markdown_full_row_mean_has_no_marker():
    rocs = dict(zip(TASKS, [0.70, 0.71, 0.72, 0.73, 0.74, 0.75, 0.80], strict=True))
    text = markdown_report([cell("full", t, 0, r) for t, r in rocs.items()],
                           include_paper=False)
    row = table_row(text, "full")
    assert row[:7] == ["70.0 (n=1)", "71.0 (n=1)", "72.0 (n=1)", "73.0 (n=1)",
                       "74.0 (n=1)", "75.0 (n=1)", "80.0 (n=1)"]
    assert row[7] == "73.6"  # 5.15 / 7 = 0.7357
    assert row[8] == "73.3"  # without ClinTox's 0.75: 4.40 / 6
    assert row[9] == "50.0 (n=1)"  # the helper's PRC-AUC


def test_markdown_header_and_wall_table(records):
    text = markdown_report(records, title="Smoke", command="exlm-chem benchmark --seeds 0 1 2")
    assert text.startswith("# Smoke\n")
    assert "- split: scaffold\n" in text
    assert "- seeds: 0 1 2\n" in text
    assert "- machine(s): test-box\n" in text
    assert "- commit(s): abc1234\n" in text
    assert "- command: `exlm-chem benchmark --seeds 0 1 2`" in text
    assert f"  - {EXLM}: max epochs 5, max minutes 3\n" in text
    assert f"  - {RF}: none\n" in text
    walls = text.split("## Wall time per cell")[1]
    rows = [line for line in walls.splitlines() if line.startswith(f"| {EXLM} |")]
    assert rows == [
        f"| {EXLM} | bace | 0 1 | 15.0 | 20.0 | 5.0 | 1/2 | max epochs 5, max minutes 3 |",
        f"| {EXLM} | muv | 0 1 2 | 10.0 | 10.0 | 4.0 | 0/3 | max epochs 5, max minutes 3 |"]
    assert table_row(walls, RF) == ["bace", "0", "10.0", "10.0", "–", "0/1", "none"]
    assert "probe mode" in text and "trapezoid" in text and "not measured here" in text
    random = markdown_report([r._replace(split="random") for r in records])
    assert "- split: random\n" in random and "non-scaffold split" in random
    assert "probe mode" not in random
    # our rows come before the quoted ones, in first-appearance order
    table = main_table(text)
    assert table.index(EXLM) < table.index(RF) < table.index("paper: EXLM")


def test_paper_rows_are_quoted_and_marked(records):
    table = paper_table()
    assert "not measured" in table["_source"]["note"]
    assert list(table["rows"]) == ["D-MPNN", "Attentive FP", "N-Gram_RF", "GROVER",
                                   "GraphMVP", "Mole-BERT", "3D InfoMax", "SMILES-BERT*",
                                   "EXLM"]
    for name, values in table["rows"].items():
        assert set(values) == {*TASKS, "mean"}, name
        present = [values[t] for t in TASKS if values[t] is not None]
        if values["mean"] is not None:
            # transcription check: the printed mean is the mean of the printed cells
            assert abs(np.mean(present) - values["mean"]) < 0.06, name
    text = markdown_report(records)
    exlm = table_row(text, "paper: EXLM (quoted, Table 1)")
    assert exlm == ["79.6", "72.8", "78.2", "64.5", "78.8", "91.6", "66.9", "76.1", "73.5",
                    "–"]
    ngram = table_row(text, "paper: N-Gram_RF (quoted, Table 1)")
    assert ngram[6:8] == ["–", "–"]
    assert table_row(text, "paper: SMILES-BERT* (quoted, Table 1)")[7] == "73.2"
    assert main_table(text).count("(quoted, Table 1)") == 9


def test_csv_round_trip(records, tmp_path):
    path = write_csv(records, tmp_path / "summary.csv")
    back = pd.read_csv(path, dtype={"seeds": str})
    frame = summarize(records)
    assert list(back.columns) == list(frame.columns)
    assert list(back["seeds"]) == ["0 1", "0 1 2", "0", "0 1"]
    for column in ("roc_auc_mean", "roc_auc_std", "prc_auc_mean", "wall_s_max",
                   "epochs_mean"):
        np.testing.assert_allclose(back[column], frame[column], rtol=1e-12)
    assert list(back["label"]) == list(frame["label"])

    cells = pd.read_csv(write_cells_csv(records, tmp_path / "cells.csv"))
    assert len(cells) == len(records)
    assert json.loads(cells.loc[0, "per_task_roc_auc"]) == [0.8, None]
    assert json.loads(cells.loc[0, "budget"]) == {"max_epochs": 5, "max_minutes": 3.0}
    np.testing.assert_allclose(cells["roc_auc"], [r.roc_auc for r in records])


def test_records_from_results_file_report_the_same(records, tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl")
    for record in records:
        results.append(record)
    assert markdown_report(results.records()) == markdown_report(records)


def test_plot_writes_png(records, tmp_path):
    path = plot_report(records, tmp_path / "plot.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]


def test_chart_data_is_plain_numbers_with_each_rows_budget(records):
    data = chart_data(records)
    assert [r.label for r in data.rows] == [EXLM, RF]
    exlm, rf = data.rows
    assert exlm.budget == "max epochs 5, max minutes 3" and rf.budget == "no limit"
    bace, muv = TASKS.index("bace"), TASKS.index("muv")
    assert exlm.means[bace] == pytest.approx(75.0) and exlm.means[muv] == pytest.approx(70.0)
    assert exlm.stds[bace] == pytest.approx(100 * np.std([0.8, 0.7], ddof=1))
    assert math.isnan(exlm.means[TASKS.index("tox21")])
    assert (exlm.mean, exlm.n_tasks) == (pytest.approx(72.5), 2)
    assert [q.name for q in data.quoted] == ["EXLM", "SMILES-BERT*"]
    assert len(data.quoted[0].values) == len(TASKS) + 1
    assert "budget" not in data.subtitle  # budgets belong to rows, not one subtitle
    assert chart_data(records, include_paper=False).quoted == []


def test_chart_axis_starts_at_chance_or_zero():
    assert y_floor([50.0, 71.2, float("nan")]) == CHANCE == 50.0
    assert y_floor([49.9, 80.0]) == 0.0


def test_report_plot_does_not_import_the_report():
    import ast

    import exlm_chem.benchmark.report_plot as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("exlm_chem.benchmark")}


def test_written_files_respect_the_umask(records, tmp_path):
    import os

    previous = os.umask(0o027)
    try:
        paths = write_report(records, tmp_path / "out")
    finally:
        os.umask(previous)
    modes = {name: path.stat().st_mode & 0o777 for name, path in paths.items()}
    assert modes == dict.fromkeys(paths, 0o640)  # 0o666 minus the umask, not mkstemp's 0600


def test_write_report_files(records, tmp_path):
    paths = write_report(records, tmp_path / "out", command="exlm-chem benchmark")
    assert set(paths) == {"markdown", "summary_csv", "cells_csv", "plot"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "cells.csv", "report.md", "report.png", "summary.csv"]
    assert "- command: `exlm-chem benchmark`" in paths["markdown"].read_text("utf-8")
    assert paths["plot"].read_bytes()[:8] == PNG_MAGIC
    assert len(pd.read_csv(paths["cells_csv"])) == len(records)


def test_empty_records_are_an_error():
    assert summarize([]).empty
    with pytest.raises(ValueError, match="no benchmark cells"):
        markdown_report([])


def test_calibration_table(records):
    with_calibration = [r._replace(brier=b, ece=e) for r, b, e in
                        zip(records[:2], (0.2, 0.1), (0.05, 0.15), strict=True)]
    markdown = markdown_report(with_calibration + records[2:])
    part = markdown.split("## Calibration of test probabilities")[1].split("## Wall time")[0]
    assert table_row(part, EXLM) == ["bace", "2", "0.150 ± 0.071", "0.100 ± 0.071"]
    assert RF not in part  # no calibration metrics: no row
    assert "## Calibration" not in markdown_report(records)
