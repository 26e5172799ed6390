"""The GPU fine-tuning entry point, dry run on CPU, in a process where RDKit cannot load."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exlm_chem.benchmark.prepared import PreparedSplits, prepare_splits
from exlm_chem.benchmark.records import ResultsFile
from exlm_chem.benchmark.tasks import task_sha256

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu" / "finetune_cells.py"
BLOCK_RDKIT = """
import sys

class _BlockRDKit:
    def find_spec(self, name, path=None, target=None):
        if name == "rdkit" or name.startswith("rdkit."):
            raise ImportError(f"RDKit is not installed on the GPU machine ({name})")

sys.meta_path.insert(0, _BlockRDKit())
"""


def _env(tmp_path: Path) -> dict[str, str]:
    blocker = tmp_path / "no_rdkit"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCK_RDKIT)  # loads in every process
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker), str(REPO)]))
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # two spawned workers import torch and sklearn: ~1 min on 2 cores
def test_dry_run_without_rdkit_writes_runner_records_and_resumes(
    tmp_path, moleculenet_dir, tiny_checkpoint, tiny_mlm_checkpoint
):
    prepared = tmp_path / "splits"
    manifest = prepare_splits(["bbbp"], "scaffold", prepared, data_path=moleculenet_dir)
    env = _env(tmp_path)
    blocked = subprocess.run(
        [sys.executable, "-c", "import rdkit"], env=env, capture_output=True, text=True
    )
    assert blocked.returncode != 0 and "not installed on the GPU machine" in blocked.stderr

    out = tmp_path / "cells"
    args = [
        "--prepared",
        str(prepared),
        "--out",
        str(out),
        "--dry-run",
        "--workers",
        "2",
        "--seeds",
        "0",
        "1",
        "--model",
        str(tiny_checkpoint),
        "--twin",
        str(tiny_mlm_checkpoint),
        "--commit",
        "test123",
    ]
    first = _run(args, env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "4 new records appended" in first.stderr
    assert "# Fine-tuning cells" in first.stdout and "BBBP" in first.stdout  # the report

    records = ResultsFile(out / "results.jsonl").records()
    assert sorted((r.method, r.seed) for r in records) == [
        ("exlm", 0),
        ("exlm", 1),
        ("twin", 0),
        ("twin", 1),
    ]
    data_sha = task_sha256("bbbp", moleculenet_dir)  # what the CPU runner keys cells with
    assert manifest["tasks"]["bbbp"]["data_sha256"] == data_sha
    for r in records:
        assert (r.task, r.mode, r.split, r.commit) == ("bbbp", "finetune", "scaffold", "test123")
        assert (r.n_train, r.n_valid, r.n_test, r.epochs) == (48, 16, 16, 1)
        assert r.protocol["data_sha256"] == data_sha
        assert r.protocol["inputs"]["expansion_k"] == (2 if r.method == "exlm" else 1)
        assert r.protocol["settings"]["dry_run_rows"] == {"train": 48, "valid": 16, "test": 16}
        assert r.settings["batch_size"] == 128  # BBBP's Table 8 row
    assert len(list((out / "parts").glob("worker-*.jsonl"))) == 2

    again = _run(args, env)  # every key is there: nothing runs, nothing is appended
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells pending, 4 already done" in again.stderr
    assert "0 new records appended" in again.stderr
    assert len(ResultsFile(out / "results.jsonl").records()) == 4


def test_prepared_splits_round_trip(tmp_path, moleculenet_dir):
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles
    from exlm_chem.data.tokenizer import SmilesTokenizer

    prepare_splits(["clintox"], "scaffold", tmp_path, data_path=moleculenet_dir)
    source = PreparedSplits(tmp_path)
    data = source.load("clintox", "scaffold", 2)  # seed-independent split: seed 0's
    expected = load_task("clintox", "scaffold", 0, moleculenet_dir)
    tokenizer = SmilesTokenizer()
    canonical = with_canonical_smiles(expected).smiles
    assert [list(row) for row in data.smiles] == [
        tokenizer.encode(s, max_length=256) for s in canonical
    ]
    assert sum(a != b for a, b in zip(canonical, expected.smiles, strict=True)) > 100
    for part in ("train", "valid", "test"):
        assert getattr(data, part).tolist() == getattr(expected, part).tolist()
    assert data.labels.shape == expected.labels.shape == (1480, 2)
    assert data.data_sha256 == expected.data_sha256
    source.check_vocabulary(REPO / "models" / "exlm-small" / "vocab.txt")
    with open(tmp_path / "manifest.json") as handle:
        manifest = json.load(handle)
    assert manifest["vocab_size"] == len(tokenizer)
    assert manifest["smiles"] == "rdkit-canonical"
    format2 = tmp_path / "format2"  # stored splits of format 2 hash vocab.txt's text
    format2.mkdir()
    text = "".join(f"{token}\n" for token in tokenizer.tokens)
    (format2 / "manifest.json").write_text(json.dumps({
        **manifest, "format": "exlm_chem-splits-2",
        "vocab_sha256": hashlib.sha256(text.encode()).hexdigest()}))
    PreparedSplits(format2).check_vocabulary(REPO / "models" / "exlm-small" / "vocab.txt")
    older = tmp_path / "older"  # splits of format 1 hold the SMILES as written
    older.mkdir()
    (older / "manifest.json").write_text(json.dumps({**manifest, "format": "exlm_chem-splits-1"}))
    with pytest.raises(ValueError, match="prepare them again"):
        PreparedSplits(older)
    (tmp_path / "clintox.npz").write_bytes(b"damaged")
    try:
        source.load("clintox", "scaffold", 0)
    except ValueError as error:
        assert "does not match its checksum" in str(error)
    else:
        raise AssertionError("a damaged file must be refused")
