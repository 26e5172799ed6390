"""The multi-task lever study: no fit sees a molecule that any task scores, the union holds
one row per molecule with NaN where a task has no label, each task is scored on its own
column, and a rerun skips what is there."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest
from repo_scripts import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("benchmarks/tdc/tdc_multitask.py")


# ethanol and propanol in both tasks; acetic acid (its sodium salt in "b": the same
# parent) is held out by "a"; benzene and propylamine are held out by "b"
SMILES = {"a": ["CCO", "CCCO", "CC(=O)O", "CCCCO", "CCN"],
          "b": ["CCO", "CCCO", "CC(=O)[O-].[Na+]", "c1ccccc1", "CCCN"]}
LABELS = {"a": [1, 0, 1, 0, 0], "b": [0, 1, 1, 1, 0]}


def _datas():
    from exlm_chem.benchmark.tasks import TaskData

    # the cluster split: fitted on train (+ an empty valid part), scored on test
    held = {"a": [2, 4], "b": [3, 4]}
    return {t: TaskData(t, SMILES[t], np.array(LABELS[t], np.float64)[:, None],
                        np.array([i for i in range(5) if i not in held[t]]),
                        np.zeros(0, np.int64), np.array(held[t]), metric="roc_auc")
            for t in SMILES}


class Recorder:
    """An estimator that predicts each task's mean label and keeps what it was fitted on."""

    fitted: ClassVar[list[list[str]]] = []

    def fit(self, smiles, labels):
        Recorder.fitted.append(list(smiles))
        self.mean_ = np.nanmean(labels, axis=0)
        return self

    def predict_proba(self, smiles):
        return np.tile(self.mean_, (len(smiles), 1)) - 0.01 * np.arange(len(smiles))[:, None]


def test_no_fit_reads_a_molecule_some_task_scores(study) -> None:
    rows, dropped = study.training_rows(_datas(), "cluster")
    # "b" loses its acetate (the parent "a" scores); "a" keeps everything but its own
    assert rows["a"].tolist() == [0, 1, 3] and dropped["a"] == 0
    assert rows["b"].tolist() == [0, 1] and dropped["b"] == 1


def test_the_union_has_one_row_per_molecule_and_nan_where_a_task_has_no_label(study):
    datas = _datas()
    smiles, labels = study.union(datas, study.training_rows(datas, "cluster")[0])
    assert smiles == ["CCO", "CCCO", "CCCCO"]
    assert np.array_equal(labels, np.array([[1, 0], [0, 1], [0, np.nan]]),
                          equal_nan=True)


def test_both_arms_are_scored_on_each_tasks_held_out_rows_and_a_rerun_skips(study, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(study, "load_split", lambda tasks, split, seed, data_path: _datas())
    monkeypatch.setattr(study, "_network", lambda seed, model: Recorder())
    Recorder.fitted = []
    written = study.run(["a", "b"], "cluster", [1], tmp_path, "model")
    assert [(r["arm"], r["task"]) for r in written] == [
        ("single", "a"), ("single", "b"), ("multi", "a"), ("multi", "b")]
    assert Recorder.fitted == [["CCO", "CCCO", "CCCCO"], ["CCO", "CCCO"],
                               ["CCO", "CCCO", "CCCCO"]]
    with np.load(tmp_path / "predictions" / "cluster_seed1_multi.npz") as kept:
        # "a"'s column: the mean of its three labels (1, 0, 0); "b"'s: of its two (0, 1)
        assert np.allclose(kept["a"], [1 / 3, 1 / 3 - 0.01])
        assert np.allclose(kept["b"], [0.5, 0.49])
    assert all(r["mixed_score"] is None for r in written)  # no --trees
    assert study.run(["a", "b"], "cluster", [1], tmp_path, "model") == []
    assert len(Recorder.fitted) == 3
    table = study.report(tmp_path)
    assert "| a | 1.000 | 1.000 | – | – |" in table
    assert "multi against single, alone: +0.00 %" in table and "(seeds 1)" in table
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {r["fit_tasks"] for r in records if r["arm"] == "multi"} == {2}
