"""The TDC ADMET out-of-distribution split and its report."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.benchmark import report_ood
from exlm_chem.benchmark.tasks import CLUSTER_TEST_FRACTION
from exlm_chem.benchmark.tdc import (
    TDC_CLUSTER_SPLIT,
    TDC_FIT_SPLIT,
    load_tdc_task,
)


def _cell(label: str, task: str, split: str, seed: int, score: float) -> object:
    from exlm_chem.benchmark.records import CellRecord

    nan = float("nan")
    return CellRecord("m", label, None, "supervised", task, seed, split, nan, nan, 1, [None],
                      10, 0, 5, None, None, False, {}, {}, 1.0, "abc", "m", "t",
                      task_type="classification", metric="roc_auc", score=score)


def test_the_cluster_split_holds_out_the_molecules_least_like_the_rest():
    data = load_tdc_task("hia_hou", 1, cluster=True)
    assert len(data.valid) == 0 and not data.held_out_valid
    assert not set(data.train) & set(data.test)
    assert len(data.train) + len(data.test) == len(data.smiles)
    assert abs(len(data.test) - CLUSTER_TEST_FRACTION * len(data.smiles)) < 0.03 * len(
        data.smiles)
    again = load_tdc_task("hia_hou", 3, cluster=True)  # the seed seeds the method only
    np.testing.assert_array_equal(again.test, data.test)
    n, cluster = report_ood.part_similarity("hia_hou", TDC_CLUSTER_SPLIT)
    _, tdc_test = report_ood.part_similarity("hia_hou", TDC_FIT_SPLIT)
    assert n == len(data.test) and cluster < tdc_test - 0.1


def test_the_report_puts_rows_side_by_side_and_counts_the_best():
    records = [_cell("trees", "hia_hou", TDC_CLUSTER_SPLIT, s, v) for s, v in ((1, 0.9), (2, 0.8))]
    records += [_cell("chemprop", "hia_hou", TDC_CLUSTER_SPLIT, 1, 0.7),
                _cell("trees", "herg", TDC_CLUSTER_SPLIT, 1, 0.6),
                _cell("chemprop", "herg", TDC_CLUSTER_SPLIT, 1, 0.65),
                _cell("trees", "hia_hou", TDC_FIT_SPLIT, 1, 0.95)]
    text = report_ood.markdown_report(records, "exlm-chem benchmark ...", distances=False)
    assert "| **trees** | 0.850 ± 0.050 | 2 | 0.950 ± 0.000 |" in text
    assert "| chemprop | 0.700 ± 0.000 | 1 | – |" in text
    assert "| trees | 1 of 2 |" in text and "| chemprop | 1 of 2 |" in text
    assert text.index("## hia_hou") < text.index("## herg")  # TDC's order


def test_the_cli_refuses_a_held_out_valid_part_with_the_cluster_split(tmp_path):
    from exlm_chem.cli import main

    # moleculenet takes the cluster split too (test_cluster_split_moleculenet.py); neither
    # suite has a valid part to hold out under it
    with pytest.raises(ValueError, match="--fit-on does not apply"):
        main(["benchmark", "--split", "cluster", "--fit-on", "train", "--tasks", "bbbp",
              "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="--fit-on does not apply"):
        main(["benchmark", "--suite", "tdc-admet", "--split", "cluster", "--fit-on",
              "train_val", "--out", str(tmp_path)])


def test_each_member_of_an_estimator_cell_is_a_row_of_its_own(tmp_path):
    from exlm_chem.benchmark.records import RESULTS_FILE, ResultsFile

    cell = _cell("defaults", "hia_hou", TDC_CLUSTER_SPLIT, 1, 0.9)._replace(n_test=4)
    ResultsFile(tmp_path / RESULTS_FILE).append(cell)
    labels = np.array([[0.0], [1.0], [0.0], [1.0]])
    (tmp_path / "parts").mkdir()
    np.savez(tmp_path / "parts" / "hia_hou_seed1.npz", test_labels=labels,
             test_network=np.array([[0.1], [0.9], [0.2], [0.8]]),  # ranks them all right
             test_trees=np.array([[0.9], [0.1], [0.2], [0.8]]))  # 1 of 4 pairs right
    np.savez(tmp_path / "parts" / "herg_seed1.npz", test_labels=labels[:3],  # no record
             test_network=labels[:3], test_trees=labels[:3])
    members = {r.label: r for r in report_ood.member_records([tmp_path])}
    assert {k: r.score for k, r in members.items()} == {"defaults: network alone": 1.0,
                                                       "defaults: trees alone": 0.25}
    # the cell's other figures are the member's too, not the combined model's
    network, trees = members["defaults: network alone"], members["defaults: trees alone"]
    assert network.roc_auc == network.prc_auc == 1.0 and trees.prc_auc < 1.0
    assert trees.roc_auc == 0.25 and network.brier is None
    # another split's parts in the same folder (another test part) are not this cell's
    ResultsFile(tmp_path / RESULTS_FILE).append(cell._replace(n_test=5, finished_at="u"))
    assert report_ood.member_records([tmp_path]) == []


def test_a_member_row_takes_the_tdc_figure_of_the_same_member_and_newer_rows_count_older_cells():
    old, new = "ExLM (estimator 0.5.4 defaults)", "ExLM (estimator 0.5.5 defaults)"
    words = report_ood.MEMBERS["trees"]
    records = [_cell(new + words, "hia_hou", TDC_CLUSTER_SPLIT, 1, 0.8),
               _cell(new, "hia_hou", TDC_CLUSTER_SPLIT, 1, 0.85),
               _cell("chemprop", "hia_hou", TDC_CLUSTER_SPLIT, 1, 0.9),
               # 0.5.4's cells stand in 0.5.5's row: its fit held out too few to choose
               _cell(old + words, "hia_hou", TDC_FIT_SPLIT, 1, 0.95),
               _cell(old, "hia_hou", TDC_FIT_SPLIT, 1, 0.97),
               _cell("chemprop", "hia_hou", "tdc_scaffold", 1, 0.93)]
    text = report_ood.markdown_report(records, distances=False)
    assert f"| {new}{words} | 0.800 ± 0.000 | 1 | 0.950 ± 0.000 |" in text
    assert f"| {new} | 0.850 ± 0.000 | 1 | 0.970 ± 0.000 |" in text
    assert "| **chemprop** | 0.900 ± 0.000 | 1 | 0.930 ± 0.000 (train part) |" in text
    head = text[text.index("## Head to head"):]
    assert "| (3) chemprop | 1 / 1 | 1 / 1 | – |" in head
    assert f"| (1) {new}{words} | – | 0 / 1 | 0 / 1 |" in head


def test_the_cli_runs_the_cluster_split_resumes_and_reports_the_parts_distance(tmp_path,
                                                                               caplog):
    import json

    from exlm_chem.cli import main

    out = tmp_path / "ood"
    argv = ["benchmark", "--suite", "tdc-admet", "--split", "cluster", "--tasks", "hia_hou",
            "--seeds", "1", "--methods", "gbt_maplight", "--threads", "1", "--no-progress",
            "--out", str(out)]
    assert main(argv) == 0
    report = (out / report_ood.REPORT_FILE).read_text()
    assert "## hia_hou (roc_auc, higher is better)" in report
    assert "median nearest-neighbour similarity" in report and "## Head to head" in report
    with caplog.at_level("INFO", logger="exlm_chem.benchmark.runner"):
        assert main(argv) == 0
    assert "resuming: 1 of 1 cells" in caplog.text
    (line,) = (out / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["split"] == TDC_CLUSTER_SPLIT
