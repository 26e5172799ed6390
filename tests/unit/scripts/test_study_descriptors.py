"""The CPU study's descriptor reference row (``benchmarks/pretraining/pretrain_cpu_study.py
descriptors``).

Tiny tasks of a few dozen molecules stand in for the five MoleculeNet tasks; no model runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from repo_scripts import load_script

from exlm_chem.benchmark.tasks import TaskData

study = load_script("benchmarks/pretraining/pretrain_cpu_study.py")


def _tiny_task(name: str) -> TaskData:
    """40 small molecules, label 1 = holds an oxygen; both classes in train and test."""
    smiles = [("C" * n) + tail for n in range(1, 11) for tail in ("", "O", "N", "C(=O)O")]
    labels = np.array([[float("O" in s)] for s in smiles])
    rows = np.arange(len(smiles))
    return TaskData(name, smiles, labels, rows[rows % 5 != 0], rows[:0], rows[rows % 5 == 0],
                    data_sha256="0" * 64)


@pytest.fixture
def tasks(monkeypatch: pytest.MonkeyPatch) -> dict[str, TaskData]:
    tiny = {name: _tiny_task(name) for name in study.TASKS}
    monkeypatch.setattr(study, "_tasks", lambda: tiny)
    return tiny


def test_descriptors_record_once(tasks: dict, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "probes.jsonl"
    args = argparse.Namespace(out=str(out), threads=1)
    study.cmd_descriptors(args)
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["arm"] == study.DESCRIPTOR_ARM and record["pooling"] == study.NO_POOLING
    assert record["weights_sha256"] is None
    assert record["features_sha256"] == study.descriptor_key()[0]
    assert record["n_features"] > 100 and record["feature_settings"]["rdkit_version"]
    scores = record["roc_auc"]
    assert set(scores) == {*study.TASKS, "mean", "mean4"}
    assert all(0.5 < scores[t] <= 1.0 for t in study.TASKS)  # oxygen is easy to see
    assert scores["mean"] == pytest.approx(np.mean([scores[t] for t in study.TASKS]))
    assert study.descriptor_key()[0] in study._done(out)
    study.cmd_descriptors(args)  # the same descriptor set: skipped
    assert len(out.read_text().splitlines()) == 1
    assert "probed already" in capsys.readouterr().out


def test_descriptor_key_follows_the_feature_set(monkeypatch: pytest.MonkeyPatch) -> None:
    key = study.descriptor_key()[0]
    assert study.descriptor_key()[0] == key  # stable
    monkeypatch.setattr("exlm_chem.data.descriptors.rdkit_version", lambda: "1999.01.1")
    assert study.descriptor_key()[0] != key  # another RDKit: probed again


def test_missing_descriptors_take_the_package_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """NaN (and a column with no value at all) reach the probe as finite values."""
    task = _tiny_task("bbbp")
    raw = np.column_stack([task.labels[:, 0] + np.linspace(0, 0.1, 40), np.full(40, np.nan),
                           np.linspace(0, 1, 40)]).astype(np.float32)
    raw[3, 0] = np.nan
    raw[7, 2] = np.nan
    monkeypatch.setattr("exlm_chem.benchmark.features.task_features",
                        lambda data, kind, n_jobs=None, cache_dir=None: raw)
    scores = study.probe_descriptors({name: task._replace(name=name) for name in study.TASKS})
    assert all(np.isfinite(scores[t]) for t in study.TASKS)
    assert scores["bbbp"] > 0.9


def test_report_lists_the_reference_row_and_plots_it(tasks: dict, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    out = tmp_path / "probes.jsonl"
    study.cmd_descriptors(argparse.Namespace(out=str(out), threads=1))
    auc = {**dict.fromkeys(study.TASKS, 0.7), "mean": 0.7, "mean4": 0.7}
    checkpoint = {"arm": "exlm", "weights_sha256": "a" * 64, "step": 5, "tokens_seen": 10**6,
                  "cpu_seconds": 600.0, "machine": "AMD EPYC, 2 cores", "roc_auc": auc}
    control = {**checkpoint, "arm": "random-init d256 exlm", "step": 0, "tokens_seen": 0,
               "cpu_seconds": 0.0, "control_seed": 0}
    with out.open("a") as f:
        for record in (checkpoint, control):
            for pooling in study.POOLINGS:
                f.write(json.dumps({**record, "pooling": pooling}) + "\n")
    capsys.readouterr()
    plot = tmp_path / "curves.png"
    study.cmd_report(argparse.Namespace(out=str(out), plot=str(plot)))
    first, bought = capsys.readouterr().out.split("\n\n")[:2]  # two tables
    table = [ln for ln in first.splitlines() if ln.startswith("| ")]
    # the reference row and the control are no arms: only exlm's two poolings
    arms = [ln.split(" | ")[:2] for ln in bought.splitlines()[2:] if ln.startswith("| ")]
    assert arms == [["| exlm", "bos"], ["| exlm", "mean"]]
    assert table[-1].startswith(f"| {study.DESCRIPTOR_ARM} | none | — (reference) | — |")
    assert len(table) == 1 + 2 * 2 + 1  # header, 2 arms x 2 poolings, the reference
    assert plot.stat().st_size > 0


def _record(arm: str, pooling: str, d_model: int, cpu_hours: float, tokens: int,
            score: float, clintox: float) -> dict:
    roc = dict.fromkeys(study.TASKS, score)
    roc["clintox"] = clintox
    roc["mean"] = float(np.mean(list(roc.values())))
    return {"arm": arm, "pooling": pooling, "d_model": d_model, "cpu_seconds": 3600 * cpu_hours,
            "tokens_seen": tokens, "machine": "Intel Xeon, 2 cores", "roc_auc": roc}


def test_bought_reads_each_arm_against_the_control_of_its_width() -> None:
    arms = {
        "random-init d256 exlm": [_record("random-init d256 exlm", "mean", 256, 0, 0, s, 0.8)
                                  for s in (0.68, 0.70)],
        "random-init d128 exlm": [_record("random-init d128 exlm", "mean", 128, 0, 0, 0.60, 0.8)],
        # its last point (most tokens), not its best, is what the arm bought
        "wide": [_record("wide", "mean", 256, 1.0, 10_000_000, 0.75, 0.8),
                 _record("wide", "mean", 256, 2.0, 20_000_000, 0.72, 0.8)],
        "narrow": [_record("narrow", "mean", 128, 0.5, 30, 0.62, 0.8)],
        "no control of this pooling": [_record("no control of this pooling", "bos", 256, 1.0,
                                               5, 0.9, 0.9)],
    }
    rows = study._bought(arms)[2:]
    assert len(rows) == 2  # controls and the arm without a matching control are left out
    narrow, wide = (row.split(" | ") for row in rows)
    # wide: 4 tasks at 72 and ClinTox 80 against 4 at 69 and 80 -> +2.4 (5), +3.0 (4), over 2 h
    assert wide[2:] == ["2.00 (Intel)", "20.00", "73.6", "+2.4", "+1.20", "72.0", "+3.0",
                        "+1.50 |"]
    assert narrow[5:7] == ["+1.6", "+3.20"]  # against the d 128 control, over half an hour


def test_selection_table_lists_validation_and_regression_probes() -> None:
    old = _record("exlm", "mean", 256, 1.0, 10, 0.7, 0.8)  # probed before either existed
    new = {**_record("exlm", "mean", 256, 2.0, 2_000_000, 0.7, 0.8),
           "valid_roc_auc": {"mean": 0.65}, "rmse": {"esol": 1.25, "lipo": 0.9}}
    control = {**_record("random-init d256 exlm", "mean", 256, 0, 0, 0.7, 0.8),
               "control_seed": 3, "valid_roc_auc": {"mean": 0.6}}
    rows = study._selection_and_regression({"exlm": [new, old],
                                            "random-init d256 exlm": [control]})[2:]
    assert rows == ["| exlm | mean | 2.00 | 65.0 | 72.0 | 1.250 | – | 0.900 |",
                    "| random-init d256 exlm (seed 3) | mean | 0.00 | 60.0 | 72.0 | – | – | – |"]


def test_report_keeps_the_latest_probe_of_a_point_and_layers_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = {**_record("exlm", "mean", 256, 1.0, 10, 0.70, 0.8), "step": 5}
    again = {**old, "valid_roc_auc": {"mean": 0.65}}
    layer = {**again, "layers": 3, "roc_auc": {**again["roc_auc"], "mean": 0.5}}
    control = {**_record("random-init d256 exlm", "mean", 256, 0, 0, 0.7, 0.8), "step": 0,
               "weights_sha256": "c" * 64, "control_seed": 0}
    other_seed = {**control, "weights_sha256": "d" * 64, "control_seed": 1,
                  "roc_auc": {**control["roc_auc"], "mean": 0.6}}
    seed0_again = {**control, "weights_sha256": "e" * 64}
    out = tmp_path / "probes.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in (old, again, layer, control,
                                                            other_seed, seed0_again)))
    study.cmd_report(argparse.Namespace(out=str(out), plot=None))
    tables = capsys.readouterr().out.split("\n\n")
    selection = tables[2].splitlines()[2:]
    assert [row.split(" | ")[0] for row in selection] == ["| exlm", "| exlm @ 3 blocks"]
    # seed 0 probed twice counts once in the control's mean: (72 + 60) / 2 = 66, and the
    # arm's 72 is +6.0 over it (counted twice, the control would read 68: +4.0)
    bought = [row for row in tables[1].splitlines() if row.startswith("| exlm | mean")]
    assert bought[0].split(" | ")[5] == "+6.0"
