"""Benchmark records, the results file, cell scoring and the budget/method parsing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exlm_chem.benchmark.methods import build_methods, default_twin
from exlm_chem.benchmark.records import Budget, CellRecord, MethodOutput, ResultsFile
from exlm_chem.benchmark.rf import ecfp4_bits
from exlm_chem.benchmark.scoring import score_cell
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.cli.benchmark import parse_budget


def record(task: str = "bace", seed: int = 0, roc: float = 0.75, **changes) -> CellRecord:
    values = dict(
        method="rf_ecfp4", label="RF on ECFP4", model=None, mode="supervised", task=task,
        seed=seed, split="scaffold", roc_auc=roc, prc_auc=0.5, n_tasks_scored=1,
        per_task_roc_auc=[roc], n_train=8, n_valid=1, n_test=1, epochs=None,
        best_epoch=None, stopped_early=False, budget=Budget()._asdict(), settings={},
        wall_s=1.0, commit="abc", machine="test", finished_at="2026-11-22T00:00:00+00:00")
    values.update(changes)
    return CellRecord(**values)


def test_results_file_round_trip_and_keys(tmp_path):
    results = ResultsFile(tmp_path / "out" / "results.jsonl")
    assert results.records() == [] and results.done() == set()
    results.append(record(seed=0))
    results.append(record(seed=1, roc=float("nan")))  # NaN is stored as null, read as NaN
    back = results.records()
    assert [r.seed for r in back] == [0, 1]
    assert back[0] == record(seed=0)
    assert np.isnan(back[1].roc_auc)
    assert results.done() == {record(seed=0).key(), record(seed=1).key()}
    # a different budget is a different experiment
    assert record(budget=Budget(3, None)._asdict()).key() not in results.done()


def test_torn_last_line_is_ignored_then_dropped(tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl")
    results.append(record(seed=0))
    with results.path.open("a") as handle:
        handle.write('{"method": "rf_ecfp4", "label": "RF')  # killed mid-write
    assert [r.seed for r in results.records()] == [0]
    results.append(record(seed=1))
    lines = results.path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line) for line in lines)


def test_damaged_middle_line_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    good = json.dumps(record()._asdict())
    path.write_text(good + "\n" + "garbage\n" + good + "\n")
    with pytest.raises(ValueError, match="line 2 is not a cell record"):
        ResultsFile(path).records()


def test_score_cell_skips_unfitted_and_single_class_tasks():
    labels = np.array([[0, 1, 0], [1, 1, np.nan], [0, 0, 1], [1, 0, 1], [0, 1, 1.0]])
    data = TaskData("toy", ["C"] * 5, labels, np.arange(0), np.arange(0), np.arange(5))
    scores = np.array([[0.1, np.nan, 0.2], [0.9, np.nan, 0.1], [0.2, np.nan, 0.3],
                       [0.8, np.nan, 0.4], [0.7, np.nan, 0.5]])
    roc, prc, per_task = score_cell(data, MethodOutput(scores))
    # task 0 is perfectly ranked; task 1 not fitted; task 2: 3 of the 3 pairs right
    assert per_task[0] == 1.0 and np.isnan(per_task[1]) and per_task[2] == 1.0
    assert roc == 1.0 and 0 < prc <= 1
    with pytest.raises(ValueError, match="expected"):
        score_cell(data, MethodOutput(scores[:, :2]))


def test_parse_budget():
    assert parse_budget("none") == Budget()
    assert parse_budget("epochs=5") == Budget(5, None)
    assert parse_budget("epochs=5,minutes=2.5") == Budget(5, 2.5)
    assert parse_budget("minutes=3").tag() == "<=3 min"
    for bad in ("epochs=0", "minutes=-1", "hours=2", "epochs=x"):
        with pytest.raises(ValueError, match="--budget"):
            parse_budget(bad)


def test_ecfp4_bits_exact():
    bits = ecfp4_bits(["c1ccccc1", "CCO"])
    assert bits.shape == (2, 2048) and bits.dtype == np.uint8
    # benzene: one environment per radius 0, 1, 2 (all six atoms are equivalent)
    assert bits[0].sum() == 3
    with pytest.raises(ValueError, match="row 1"):
        ecfp4_bits(["C", "C1CC"])


def test_default_twin_and_method_errors(tmp_path):
    (tmp_path / "exlm-small").mkdir()
    assert default_twin(tmp_path / "exlm-small") is None  # no twin on disk
    (tmp_path / "mlm-small").mkdir()
    (tmp_path / "mlm-small" / "config.json").write_text("{}")
    assert default_twin(tmp_path / "exlm-small") == tmp_path / "mlm-small"
    assert default_twin(tmp_path / "mlm-small") is None
    with pytest.raises(ValueError, match="unknown method"):
        build_methods(["svm"], None, None, "probe")
    with pytest.raises(ValueError, match="needs --twin"):
        build_methods(["twin"], None, None, "probe")
    specs = build_methods(["rf", "attentivefp"], None, None, "probe", budget=Budget(None, 2))
    assert [s.label for s in specs] == ["RF on ECFP4", "AttentiveFP [<=2 min]"]


def test_calibration_scores_of_probabilities_only(tmp_path):
    from exlm_chem.uncertainty.scores import calibration_scores

    labels = np.array([[0, 1], [1, np.nan], [1, 0], [0, 1]], dtype=float)
    proba = np.array([[0.1, np.nan], [0.9, np.nan], [0.6, np.nan], [0.3, np.nan]])
    brier, ece = calibration_scores(labels, proba)  # task 1 not fitted: left out
    assert brier == pytest.approx((0.01 + 0.01 + 0.16 + 0.09) / 4)
    assert ece == pytest.approx((0.1 + 0.1 + 0.4 + 0.3) / 4)
    assert calibration_scores(labels, proba * 3 - 1) == (None, None)  # a margin, not proba
    old = json.loads(json.dumps(record()._asdict()))
    del old["brier"], old["ece"]  # a record written before these metrics
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(old) + "\n")
    assert ResultsFile(path).records()[0].brier is None


def test_latest_keeps_only_the_newest_weights_of_a_checkpoint_name(tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl")
    old = dict(method="exlm", label="ExLM exlm-small (probe)", mode="probe")
    results.append(record(model="exlm-small@aaaaaaaaaaaa", task="bace", **old))
    results.append(record(model="exlm-small@aaaaaaaaaaaa", task="muv", **old))  # not rerun
    results.append(record(model="mlm-small@cccccccccccc", task="bace", **old))
    results.append(record())  # a baseline: no checkpoint
    results.append(record(model="exlm-small@bbbbbbbbbbbb", task="bace", roc=0.8, **old))
    kept = [(r.model, r.task) for r in results.latest()]
    assert kept == [("mlm-small@cccccccccccc", "bace"), (None, "bace"),
                    ("exlm-small@bbbbbbbbbbbb", "bace")]


def test_rows_of_another_label_stand_beside_each_other(tmp_path):
    results = ResultsFile(tmp_path / "results.jsonl")
    cell = dict(method="exlm_defaults", mode="estimator", model="exlm-small@aaaaaaaaaaaa",
                task="bace")
    results.append(record(label="ExLM exlm-small (estimator defaults)", **cell))
    results.append(record(label="ExLM exlm-small (estimator 0.2.0 defaults)", **cell))
    results.append(record(label="ExLM exlm-small (estimator 0.2.0 defaults)", roc=0.8, **cell))
    kept = [(r.label, r.roc_auc) for r in results.latest()]
    assert kept == [("ExLM exlm-small (estimator defaults)", 0.75),
                    ("ExLM exlm-small (estimator 0.2.0 defaults)", 0.8)]

