"""The TDC ADMET suite: TDC's metrics, the per-seed scaffold re-split, cells that score the
held-out valid part beside the test part, and the report that places rows among the
published entries."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score, roc_auc_score

from exlm_chem.benchmark import report_tdc
from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.runner import MethodSpec, run_benchmark
from exlm_chem.benchmark.tdc import TDC_SPLIT, TDCSource, load_tdc_task, tdc_metric


def test_metrics_are_tdcs() -> None:
    rng = np.random.default_rng(0)
    truth = (rng.random(50) > 0.6).astype(float)
    scores = truth * 0.3 + rng.random(50)
    assert tdc_metric("roc_auc", truth, scores) == pytest.approx(roc_auc_score(truth, scores))
    assert tdc_metric("prc_auc", truth, scores) == pytest.approx(
        average_precision_score(truth, scores))
    values = rng.lognormal(size=50)
    noisy = values + rng.normal(size=50)
    assert tdc_metric("spearman", values, noisy) == pytest.approx(
        spearmanr(values, noisy).statistic)
    assert tdc_metric("mae", values, noisy) == pytest.approx(np.mean(np.abs(values - noisy)))
    with pytest.raises(ValueError, match="NaN"):
        tdc_metric("mae", values, np.full(50, np.nan))


def test_each_seed_resplits_train_val_by_scaffold_and_the_test_part_stays() -> None:
    from exlm_chem.data.splits import scaffold_groups

    one, again, two = (load_tdc_task("herg", s) for s in (1, 1, 2))
    n_train_val = len(one.train) + len(one.valid)
    assert np.array_equal(one.valid, again.valid) and not np.array_equal(one.valid, two.valid)
    assert np.array_equal(one.test, two.test)
    assert np.array_equal(one.test, np.arange(n_train_val, len(one.smiles)))
    assert sorted(np.concatenate([one.train, one.valid]).tolist()) == list(range(n_train_val))
    assert abs(len(one.valid) / n_train_val - 0.125) < 0.03
    group = {row: k for k, rows in enumerate(scaffold_groups(one.smiles[:n_train_val]).values())
             for row in rows}
    assert not {group[i] for i in one.train} & {group[i] for i in one.valid}
    assert one.held_out_valid and one.metric == "roc_auc"


def _oracle(data, seed, budget, progress):
    """Scores that rank every test and valid row right: AUROC 1 on both parts."""
    return MethodOutput(data.labels[data.test].copy(), settings={"oracle": True},
                        valid_scores=data.labels[data.valid].copy())


def test_a_cell_records_the_metric_on_the_test_and_the_held_out_valid_part(tmp_path) -> None:
    spec = MethodSpec("oracle", "oracle", None, "supervised", _oracle, uses_budget=False)
    records = run_benchmark([spec], ["dili"], [1], TDC_SPLIT, Budget(), tmp_path,
                            progress=False, source=TDCSource())
    (record,) = records
    assert (record.metric, record.score, record.valid_score) == ("roc_auc", 1.0, 1.0)
    assert record.split == TDC_SPLIT and record.n_test == 96
    assert run_benchmark([spec], ["dili"], [1], TDC_SPLIT, Budget(), tmp_path,
                         progress=False, source=TDCSource()) == []  # resumed: nothing to do


def _row(label: str, task: str, mean: float) -> report_tdc.RowScore:
    return report_tdc.RowScore(label, task, "mae", mean, 0.0, None, (1, 2, 3), wall_s=10.0)


def test_a_row_takes_its_place_among_the_published_entries_and_ties_share_it() -> None:
    # caco2_wang (MAE): CaliciBoost 0.256, XG Boost 0.274, MapLight 0.276, BaseBoosting 0.285
    assert report_tdc.published_rank("caco2_wang", 0.285) == (4, 25)
    assert report_tdc.published_rank("caco2_wang", 0.250) == (1, 25)
    placed = report_tdc.placed("caco2_wang", [_row("ours", "caco2_wang", 0.285)])
    assert placed[3][:2] == ("4", "ours") and placed[3][4] == "measured here"
    assert placed[4][:2] == ("4", "BaseBoosting") and placed[4][4] == "published"
    assert len(placed) == 25


def test_the_summary_counts_ranks_and_anchors() -> None:
    rows = [_row("ours", "caco2_wang", 0.285),  # Chemprop-RDKit 0.330, MiniMol 0.350
            _row("ours", "lipophilicity_astrazeneca", 0.460)]  # MiniMol 0.456: behind
    summary = report_tdc.summarise_row("ours", rows)
    assert summary.mean_rank == pytest.approx((4 + 2) / 2)
    assert summary.ahead_of["Chemprop-RDKit"] == (2, 2)
    assert summary.ahead_of["MiniMol"] == (1, 2)
    assert summary.top3 == 1


def test_the_plot_puts_forward_the_default_row_on_the_most_tasks_then_the_newest() -> None:
    old, new = "ExLM m (estimator 0.3.0 defaults)", "ExLM m (estimator 0.10.0 defaults)"
    lever = "ExLM m (estimator 0.10.0 defaults, pretrained=None)"  # a lever, never chosen
    rows = [_row(old, "caco2_wang", 0.3), _row(old, "ppbr_az", 8.0),
            _row(new, "caco2_wang", 0.3), *[_row(lever, t, 0.3) for t in "abc"]]
    assert report_tdc.shipped_row(rows) == old  # two tasks against one
    assert report_tdc.shipped_row([*rows, _row(new, "ppbr_az", 8.0)]) == new  # 10 > 3
    assert report_tdc.shipped_row([_row(lever, "caco2_wang", 0.3)]) is None


def test_the_cli_runs_resumes_and_reports_a_row_among_the_published(tmp_path, caplog) -> None:
    from exlm_chem.cli import main

    out = tmp_path / "tdc"
    argv = ["benchmark", "--suite", "tdc-admet", "--tasks", "dili", "--seeds", "1",
            "--methods", "gbt_maplight", "--threads", "1", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    report = (out / "report.md").read_text()
    assert "**GBT on MapLight's features" in report and "measured here" in report
    assert "MiniMol" in report and (out / "ranks.png").stat().st_size > 0
    with caplog.at_level("INFO", logger="exlm_chem.benchmark.runner"):
        assert main(argv) == 0
    assert "resuming: 1 of 1 cells" in caplog.text
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["metric"] == "roc_auc"


def test_the_cli_refuses_a_split_for_tdc(tmp_path) -> None:
    from exlm_chem.cli import main

    with pytest.raises(ValueError, match="tdc-admet re-splits train_val by scaffold"):
        main(["benchmark", "--suite", "tdc-admet", "--split", "scaffold", "--methods", "rf",
              "--out", str(tmp_path)])


def test_estimator_params_parse_as_literals() -> None:
    from exlm_chem.cli.benchmark import parse_estimator_params

    assert parse_estimator_params(["target_transform=auto", "pretrained=None",
                                   "tree_weight=0.5"]) == {
        "target_transform": "auto", "pretrained": None, "tree_weight": 0.5}
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_estimator_params(["auto"])


def test_the_maplight_feature_row_keys_its_four_feature_sets() -> None:
    from exlm_chem.benchmark.methods import build_methods
    from exlm_chem.benchmark.records import Budget

    gbt, maplight = build_methods(["gbt", "gbt_maplight"], None, None, "finetune")
    assert "MapLight" in maplight.label
    _, settings = maplight.protocol("dili", Budget())
    assert settings["features"] == ["morgan", "avalon", "erg", "rdkit2d"]
    assert gbt.protocol("dili", Budget())[1]["features"] == ["morgan", "rdkit2d"]


def _cell(label: str, task: str, task_type: str, score: float) -> object:
    from exlm_chem.benchmark.records import CellRecord

    nan = float("nan")
    return CellRecord("exlm_defaults", label, None, "estimator", task, 1, TDC_SPLIT, nan, nan,
                      1, [None], 10, 2, 5, None, None, False, {}, {}, 1.0, "abc", "m", "t",
                      task_type=task_type, metric="auroc", score=score, valid_score=score)


@pytest.mark.parametrize(("old", "new", "kept", "changed"), [
    ("0.3.0", "0.4.0", ("herg", "classification"), ("caco2_wang", "regression")),
    ("0.5.3", "0.5.4", ("caco2_wang", "regression"), ("herg", "classification")),
])
def test_a_cell_of_a_kept_estimator_counts_in_the_newer_default_row(old, new, kept,
                                                                    changed) -> None:
    old, new = (f"ExLM exlm-small (estimator {v} defaults)" for v in (old, new))
    rows = report_tdc.row_scores([
        _cell(old, *kept, 0.8),
        _cell(old, *changed, 0.3),  # the newer version changed this estimator
        _cell(new, "ppbr_az", "regression", 8.0),
        _cell(f"{old[:-1]}, pretrained=None)", "dili", "classification", 0.7)])
    got = {(r.label, r.task) for r in rows}
    assert got >= {(old, kept[0]), (new, kept[0]), (old, changed[0]), (new, "ppbr_az"),
                   (f"{old[:-1]}, pretrained=None)", "dili")}
    assert (new, changed[0]) not in got
    assert all("pretrained=None" not in label for label, task in got if task != "dili")


def test_0_5_5_counts_0_5_4s_cells_where_auto_could_not_choose() -> None:
    old, new = (f"ExLM exlm-small (estimator {v} defaults)" for v in ("0.5.4", "0.5.5"))
    small = _cell(old, "bbb_martins", "classification", 0.9)._replace(n_train=1624)
    large = _cell(old, "ames", "classification", 0.86)._replace(n_train=5821)
    older = _cell(old.replace("0.5.4", "0.5.3"), "caco2_wang", "regression", 0.27)
    rows = {(r.label, r.task) for r in report_tdc.row_scores([small, large, older])}
    assert (new, "bbb_martins") in rows and (new, "caco2_wang") in rows  # 0.5.3 -> 0.5.5
    assert (new, "ames") not in rows and (old, "ames") in rows


def test_a_rows_cpu_time_sums_the_cells_that_record_it_and_says_how_many() -> None:
    cells = [_cell("ours", "herg", "classification", 0.8)._replace(seed=seed, cpu_s=cpu)
             for seed, cpu in ((1, 100.0), (2, None), (3, 50.0))]
    (row,) = report_tdc.row_scores(cells)
    assert (row.cpu_s, row.cpu_cells, row.cells) == (150.0, 2, 3)
    summary = report_tdc.summarise_row("ours", [row])
    assert (summary.cpu_s, summary.cpu_cells, summary.cells) == (150.0, 2, 3)
    assert "| 0.04 (2 of 3) |" in report_tdc.markdown_report(cells)


def test_cells_fitted_on_all_of_train_val_are_a_row_of_their_own() -> None:
    from exlm_chem.benchmark.tdc import TDC_FIT_SPLIT

    label = "CatBoost on MapLight's features (MapLight's recipe)"
    held_out = _cell(label, "herg", "classification", 0.8)
    fitted = held_out._replace(split=TDC_FIT_SPLIT, seed=2, score=0.9, valid_score=None)
    rows = {r.label: r for r in report_tdc.row_scores([held_out, fitted])}
    assert set(rows) == {label, label + report_tdc.FIT_ON_TRAIN_VAL}
    assert rows[label + report_tdc.FIT_ON_TRAIN_VAL].mean == 0.9 and rows[label].mean == 0.8


def test_tdc_source_loads_train_val_whole_for_the_fit_split() -> None:
    from exlm_chem.benchmark.tdc import TDC_FIT_SPLIT, TDCSource

    data = TDCSource().load("dili", TDC_FIT_SPLIT, 1)
    held = TDCSource().load("dili", TDC_SPLIT, 1)
    assert len(data.valid) == 0 and not data.held_out_valid
    np.testing.assert_array_equal(data.train, np.sort(np.concatenate([held.train, held.valid])))
    np.testing.assert_array_equal(data.test, held.test)
