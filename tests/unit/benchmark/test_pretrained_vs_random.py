"""benchmarks/tdc/pretrained_vs_random.py: what the pre-trained encoder buys per task, on the
TDC ADMET and MoleculeNet records."""

from __future__ import annotations

import pytest
from repo_scripts import load_script

from exlm_chem.benchmark.records import Budget, CellRecord, ResultsFile


@pytest.fixture(scope="module")
def script():
    return load_script("benchmarks/tdc/pretrained_vs_random.py")


def test_tdc_margins_pair_seeds_and_point_the_better_way(script):
    cells = {
        (script.PRETRAINED, "dili"): {1: (0.90, 0.80), 2: (0.92, 0.82), 3: (0.0, 0.0)},
        (script.RANDOM, "dili"): {1: (0.85, 0.70), 2: (0.87, 0.72)},
        (script.PRETRAINED, "caco2_wang"): {1: (0.30, 0.40)},  # MAE: lower is better
        (script.RANDOM, "caco2_wang"): {1: (0.25, 0.50)},
        (script.PRETRAINED, "herg"): {1: (0.8, 0.8)},  # no random cell: no row
    }
    lines = script.tdc_table(cells)
    dili = next(line for line in lines if line.startswith("| dili |"))
    # seed 3 has no random cell, so it is left out of both means
    assert dili == "| dili | AUROC | 1 2 | 0.910 | 0.860 | +0.050 | 0.810 | 0.710 | +0.100 |"
    caco2 = next(line for line in lines if line.startswith("| caco2_wang |"))
    assert caco2 == ("| caco2_wang | MAE | 1 | 0.300 | 0.250 | -0.050 | 0.400 | 0.500 | "
                     "+0.100 |")
    assert not any(line.startswith("| herg |") for line in lines)
    # the mean margin averages only the metrics on one scale (AUROC here, not MAE)
    assert lines[-1] == (
        "TDC ADMET, 2 tasks: pre-trained ahead on the valid parts of 2 of 2, mean margin "
        "+0.100 over the 1 in AUROC, AUPRC, Spearman; pre-trained ahead on the test parts "
        "of 1 of 2, mean margin +0.050 over the 1 in AUROC, AUPRC, Spearman.")


def test_rows_fitted_on_train_val_pair_their_test_parts_alone(script):
    cells = {(script.DEFAULT, "dili"): {1: (0.90, None), 2: (0.92, None)},
             (script.DEFAULT_RANDOM, "dili"): {1: (0.91, None), 2: (0.95, None)},
             (script.PRETRAINED, "dili"): {1: (0.5, 0.5)}}  # another pair's row: not read
    lines = script.tdc_table(cells, script.DEFAULT, script.DEFAULT_RANDOM)
    assert "| dili | AUROC | 1 2 | 0.910 | 0.930 | -0.020 | – | – | – |" in lines
    assert lines[-1] == ("TDC ADMET, 1 tasks: pre-trained ahead on the test parts of 0 of 1, "
                         "mean margin -0.020 over the 1 in AUROC, AUPRC, Spearman.")


def _record(label: str, task: str, seed: int, roc: float) -> CellRecord:
    return CellRecord(
        method="exlm_defaults", label=label, model="exlm-small@x", mode="estimator",
        task=task, seed=seed, split="scaffold", roc_auc=roc, prc_auc=0.5, n_tasks_scored=1,
        per_task_roc_auc=[roc], n_train=8, n_valid=1, n_test=1, epochs=2, best_epoch=1,
        stopped_early=False, budget=Budget()._asdict(), settings={}, wall_s=1.0,
        commit="abc", machine="test", finished_at="2026-12-02T00:00:00+00:00")


def test_moleculenet_rows_pair_the_older_default_classifier_with_random_weights(
        script, tmp_path):
    path = tmp_path / "results.jsonl"
    results = ResultsFile(path)
    older = "ExLM exlm-small (estimator 0.3.0 defaults)"  # counts in the 0.4.0 default row
    for seed, (shipped, random) in enumerate([(0.80, 0.70), (0.82, 0.74), (0.9, None)]):
        results.append(_record(older, "bace", seed, shipped))
        if random is not None:
            results.append(_record(script.RANDOM, "bace", seed, random))
    results.append(_record(older, "bbbp", 0, 0.74))
    results.append(_record(script.RANDOM, "bbbp", 0, 0.76))
    results.append(_record(older, "tox21", 0, 0.78))  # no random row: not in the table
    lines = script.moleculenet_table(script.moleculenet_cells(path))
    assert "| bace | 0 1 | 81.0 | 72.0 | +9.0 |" in lines
    assert "| bbbp | 0 | 74.0 | 76.0 | -2.0 |" in lines
    assert not any("tox21" in line for line in lines)
    assert lines[-1] == ("MoleculeNet, 2 tasks: pre-trained 77.5, random weights 74.0 "
                         "(+3.5); pre-trained ahead on 1 of 2.")
