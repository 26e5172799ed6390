"""``exlm-chem benchmark`` on a tiny subset: 1 task, 1 seed, tiny models; then resume.

One task: ClinTox, the smallest multi-task classification set, so every method goes
through the multi-task path. Several tasks in one run (and their resume) are
run_benchmark's, tested in tests/integration/test_benchmark_runner.py on BACE and ClinTox.
"""

from __future__ import annotations

import json

import pytest

from exlm_chem.cli import main

pytest.importorskip("torch_geometric")


def test_benchmark_runs_reports_and_resumes(tmp_path, moleculenet_dir, tiny_checkpoint,
                                            tiny_mlm_checkpoint, capsys):
    out = tmp_path / "bench"
    argv = ["benchmark", "--tasks", "clintox", "--seeds", "0",
            "--model", str(tiny_checkpoint), "--twin", str(tiny_mlm_checkpoint),
            "--methods", "exlm", "twin", "rf", "attentivefp", "--mode", "finetune",
            "--budget", "epochs=1", "--out", str(out), "--data", str(moleculenet_dir),
            "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = (out / "results.jsonl").read_text().splitlines()
    cells = [json.loads(line) for line in lines]
    assert len(cells) == 4
    assert {(c["method"], c["task"]) for c in cells} == {
        (m, "clintox") for m in ("exlm", "twin", "rf_ecfp4", "attentivefp")}
    for cell in cells:
        assert 0.0 <= cell["roc_auc"] <= 1.0 and cell["seed"] == 0
        assert cell["n_tasks_scored"] == 2  # both ClinTox tasks
        assert cell["split"] == "scaffold" and cell["machine"] and cell["commit"]
        if cell["method"] in ("exlm", "twin", "attentivefp"):
            assert cell["epochs"] == 1 and cell["budget"]["max_epochs"] == 1
    labels = {c["method"]: c["label"] for c in cells}
    assert labels["exlm"] == "ExLM checkpoint (finetune) [<=1 ep]"
    assert labels["twin"] == "MLM checkpoint (finetune) [<=1 ep]"
    for name in ("report.md", "summary.csv", "cells.csv", "report.png"):
        assert (out / name).stat().st_size > 0
    assert "paper: EXLM (quoted, Table 1)" in printed and "RF on ECFP4" in printed

    # the same command again: every cell is found, none is rerun
    assert main(argv) == 0
    assert (out / "results.jsonl").read_text().splitlines() == lines
    # a second seed for one method adds exactly its new cells
    more = [*argv[:argv.index("--seeds") + 1], "1", *argv[argv.index("--model"):]]
    more[more.index("--methods") + 1 : more.index("--mode")] = ["rf"]
    assert main(more) == 0
    added = (out / "results.jsonl").read_text().splitlines()[len(lines):]
    assert [(json.loads(a)["method"], json.loads(a)["seed"]) for a in added] == [
        ("rf_ecfp4", 1)]


def test_bad_arguments_are_clear_errors(tmp_path, moleculenet_dir):
    base = ["benchmark", "--out", str(tmp_path), "--data", str(moleculenet_dir),
            "--no-progress", "--methods", "rf"]
    with pytest.raises(ValueError, match=r"unknown task.*choose from .*'esol', 'freesolv'"):
        main([*base, "--tasks", "tox22"])
    with pytest.raises(ValueError, match="--budget"):
        main([*base, "--tasks", "bace", "--budget", "epochs=0"])
    with pytest.raises(ValueError, match="no results"):
        main([*base, "--tasks", "bace", "--report-only"])
