"""The out-of-distribution cluster split on the MoleculeNet suite (``--split cluster``):
whole similarity clusters as the test part, no valid part, through the runner and the CLI."""

from __future__ import annotations

import json

import numpy as np

from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.runner import MethodSpec, MoleculeNetSource, run_benchmark
from exlm_chem.benchmark.tasks import CLUSTER_SPLIT, CLUSTER_TEST_FRACTION, load_task
from exlm_chem.data.similarity import morgan_bits, nearest_similarity, similarity_clusters


def _median_test_similarity(data) -> float:
    fingerprints = morgan_bits(data.smiles)
    fitted = np.concatenate([data.train, data.valid])
    return float(np.median(nearest_similarity(fingerprints.take(data.test),
                                              fingerprints.take(fitted))))


def test_the_test_part_is_whole_clusters_a_fifth_of_the_set_and_farther_than_scaffolds():
    data = load_task("esol", CLUSTER_SPLIT, 0)
    n = len(data.smiles)
    assert len(data.valid) == 0 and not data.held_out_valid
    assert data.task_type == "regression" and data.metric == ""  # MoleculeNet's RMSE/MAE
    assert not set(data.train) & set(data.test)
    assert sorted([*data.train, *data.test]) == list(range(n))
    assert abs(len(data.test) / n - CLUSTER_TEST_FRACTION) < 0.03
    clusters = similarity_clusters(morgan_bits(data.smiles))  # cluster_held_out's threshold
    assert not set(clusters[data.train]) & set(clusters[data.test])
    again = load_task("esol", CLUSTER_SPLIT, 2)  # the seed only seeds the method
    assert np.array_equal(again.test, data.test) and np.array_equal(again.train, data.train)
    # ESOL: 0.27 against the scaffold test part's 0.42
    assert _median_test_similarity(data) < _median_test_similarity(
        load_task("esol", "scaffold", 0)) - 0.1


def test_corpus_hygiene_does_not_iterate_the_cluster_split():
    from exlm_chem.data.hygiene import runner_split_modes
    from exlm_chem.data.split_modes import SPLITS

    assert CLUSTER_SPLIT not in SPLITS
    assert CLUSTER_SPLIT not in {split for split, _ in runner_split_modes()}


def _train_mean(data, seed, budget, progress):
    """The train part's mean for every test row: no fitting, a finite RMSE."""
    mean = np.nanmean(data.labels[data.train], axis=0)
    return MethodOutput(np.tile(mean, (len(data.test), 1)), settings={"mean": True})


def test_cells_on_the_cluster_split_resume_and_the_cli_reports_them(tmp_path, capsys):
    from exlm_chem.cli import main
    from exlm_chem.cli.benchmark import BenchmarkCommand

    spec = MethodSpec("mean", "train mean", None, "supervised", _train_mean, uses_budget=False)
    (record,) = run_benchmark([spec], ["freesolv"], [0], CLUSTER_SPLIT, Budget(), tmp_path,
                              progress=False, source=MoleculeNetSource())
    data = load_task("freesolv", CLUSTER_SPLIT, 0)
    assert (record.split, record.n_valid, record.n_test) == (CLUSTER_SPLIT, 0, len(data.test))
    assert record.task_type == "regression" and np.isfinite(record.rmse)
    assert run_benchmark([spec], ["freesolv"], [0], CLUSTER_SPLIT, Budget(), tmp_path,
                         progress=False, source=MoleculeNetSource()) == []  # resumed
    assert json.loads((tmp_path / "results.jsonl").read_text())["split"] == "cluster"

    assert BenchmarkCommand._tasks(["regression"], "moleculenet") == ["esol", "freesolv", "lipo"]
    assert main(["benchmark", "--tasks", "freesolv", "--split", "cluster", "--report-only",
                 "--out", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "- split: cluster" in report and "train mean" in report and "FreeSolv" in report
    assert "- split: cluster" in capsys.readouterr().out
