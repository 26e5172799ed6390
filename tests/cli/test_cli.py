"""The command line as a user runs it (subprocesses, real files)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exlm_chem.cli import main

CLI = [sys.executable, "-m", "exlm_chem.cli"]


def _env(moleculenet_dir: Path) -> dict[str, str]:
    return {**os.environ, "EXLM_CHEM_DATA": str(moleculenet_dir), "OMP_NUM_THREADS": "1"}


def _pretrain_cmd(corpus: Path, out: Path, steps: int) -> list[str]:
    return [
        "pretrain", "--corpus", str(corpus), "--out", str(out), "--preset", "tiny",
        "--max-steps", str(steps), "--max-tokens", "1024", "--corpus-limit", "400",
        "--valid-size", "20", "--checkpoint-every", "5", "--valid-every", "1000",
        "--log-every", "1", "--no-hygiene", "--warmup-steps", "10",
    ]  # fmt: skip


def test_data_summary_prints_the_table(moleculenet_dir, capsys, monkeypatch):
    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    assert main(["data", "summary", "--datasets", "bbbp", "sider"]) == 0
    out = capsys.readouterr().out
    assert "| bbbp | s3 | 2050 | 2039 | 11 | 1 |" in out
    assert "| sider | s3 | 1427 | 1427 | 0 | 27 |" in out
    assert "1631/204/204" in out  # BBBP's default split equals the paper's Table 9


def test_unknown_dataset_is_a_clear_error(moleculenet_dir, monkeypatch):
    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    with pytest.raises(ValueError, match="bbbp"):
        main(["data", "summary", "--datasets", "nope"])


def test_pretrain_corpus_is_prepared_in_the_run_and_kept_to_on_resume(messy_corpus, tmp_path,
                                                                       capsys):
    path, expected = messy_corpus
    out = tmp_path / "run"
    cmd = ["pretrain", "--corpus", str(path), "--out", str(out), "--preset", "tiny",
           "--max-steps", "2", "--max-tokens", "1024", "--warmup-steps", "1",
           "--valid-size", "4", "--no-hygiene", "--no-progress", "--device", "cpu"]
    assert main(cmd) == 0
    assert "finished at step 2" in capsys.readouterr().out
    manifest = json.loads((out / "corpus" / "manifest.json").read_text())
    assert manifest["counts"]["duplicates_removed"] == 2
    assert manifest["counts"]["molecules"] == len(expected)
    assert manifest["hygiene"] == {"enabled": False}
    # resuming with another preparation setting would continue on other molecules
    with pytest.raises(ValueError, match="max_length: 256 there, 64 here"):
        main([*cmd, "--max-steps", "3", "--max-length", "64", "--resume"])


@pytest.mark.slow
def test_pretrain_survives_a_kill_and_resumes(pretrain_dir, moleculenet_dir, tmp_path):
    corpus = pretrain_dir / "moses_train.smi.gz"
    out = tmp_path / "run"
    cmd = CLI + _pretrain_cmd(corpus, out, steps=400)
    proc = subprocess.Popen(cmd, env=_env(moleculenet_dir), stderr=subprocess.PIPE, text=True)
    state = out / "checkpoint" / "training_state.json"
    deadline = time.monotonic() + 120
    while not state.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert state.exists(), "no checkpoint was written before the kill"
    saved_step = json.loads(state.read_text())["progress"]["step"]
    assert 0 < saved_step < 400
    # no half-written checkpoint is left behind next to the real one
    assert [p.name for p in out.iterdir() if p.name.startswith(".checkpoint")] == []
    done = subprocess.run(
        CLI + _pretrain_cmd(corpus, out, steps=saved_step + 10) + ["--resume"],
        env=_env(moleculenet_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed at step {saved_step}" in done.stderr
    final = json.loads(state.read_text())["progress"]["step"]
    assert final == saved_step + 10


