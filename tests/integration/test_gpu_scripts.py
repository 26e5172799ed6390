"""The GPU pre-training script's dry run, end to end on CPU (scripts/gpu/README.md).

The same steps as on the GPU machine (install skipped, the fast descriptor targets computed
into the corpus, ``pytest -m gpu`` skipped without CUDA, benchmarks on tiny shapes, three
arms of the tiny preset side by side in the background, two of them with the descriptor
target, poll, gather), then the gathered folder is checked against the device tool's
limits and its checkpoints are loaded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import safetensors

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu" / "pretrain.sh"
sys.path.insert(0, str(REPO / "scripts" / "gpu"))

MAX_FILE = 16 * 2**20


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
    env.pop("OUT", None)
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def prepared(pretrain_dir, tmp_path_factory) -> Path:
    from exlm_chem.data.corpus_prepare import PreparationSettings, prepare_corpus

    out = tmp_path_factory.mktemp("prepared") / "tiny"
    settings = PreparationSettings(limit=300, valid_size=20, hygiene=False)
    prepare_corpus([pretrain_dir / "moses_train.smi.gz"], out, settings, n_jobs=1)
    return out


@pytest.mark.slow
def test_dry_run_start_poll_gather_unpack(prepared, tmp_path):
    from exlm_chem.model.checkpoint import load_checkpoint

    work, out, unpacked = tmp_path / "work", tmp_path / "out", tmp_path / "unpacked"
    try:
        start = _run("start", "--dry-run", "--prepared", str(prepared), "--work", str(work),
                     "--descriptors", "rdkit2d_fast", "--bench-compile", "--snapshots", "1",
                     "--arm", "exlm exlm", "--arm", "mlm-d1 mlm --aux-weight 1",
                     "--arm", "exlm-d5 exlm --aux-weight 5")
        assert start.returncode == 0, start.stdout[-3000:] + start.stderr[-3000:]
        assert "install: skipped (dry run)" in start.stdout
        assert re.search(r"== descriptors: exit 0", start.stdout), start.stdout[-3000:]
        assert "pytest -m gpu: skipped, no CUDA device" in start.stdout
        checks = json.loads((work / "plan.json").read_text())["checks"]
        assert checks == {"kernel": "not run (no CUDA device)", "step": "not run (no CUDA device)"}
        assert re.search(r"\| smiles k=2 T=5 .* \| fp32 \| .* \| ok \(", start.stdout)
        assert re.search(r"\| text-like .* \| bf16 \| .* \| ok \(", start.stdout)
        assert re.search(r"\| tiny \| exlm \| [\d.]+ \| [\d,]+ \|", start.stdout)
        assert re.search(r"\| tiny \| exlm\+compile \| [\d.]+ \| [\d,]+ \|", start.stdout)

        poll = _run("poll", "--work", str(work), "--wait", "240")
        assert poll.returncode == 0, poll.stderr[-3000:]
        for arm in ("exlm", "mlm-d1", "exlm-d5"):
            assert re.search(rf"^{arm}\s+finished\s+8/8\s", poll.stdout, re.M), poll.stdout

        gather = _run("gather", "--work", str(work), "--out", str(out))
        assert gather.returncode == 0, gather.stdout[-3000:] + gather.stderr[-3000:]
        # a further call for what had no room: those arms' weights alone
        again = _run("gather", "--work", str(work), "--out", str(tmp_path / "again"),
                     "--arms", "mlm-d1")
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        assert {str(p.relative_to(tmp_path / "again")) for p in (tmp_path / "again").rglob("*")
                if p.is_file()} == {"mlm-d1-tiny/model.safetensors", "details.tar.gz",
                                    "manifest.json"}
        wrong = _run("gather", "--work", str(work), "--out", str(tmp_path / "wrong"),
                     "--arms", "nope")
        assert wrong.returncode != 0 and "no such arm ['nope']" in wrong.stderr
    finally:
        _run("stop", "--work", str(work))

    # what the device tool brings back: <= 8 files of <= 16 MiB, <= 2 folders deep
    files = sorted(p for p in out.rglob("*") if p.is_file())
    names = {str(p.relative_to(out)) for p in files}
    # one snapshot per arm at step 4 (8 steps, --snapshots 1): room for all three
    assert names == {"exlm-tiny/model.safetensors", "mlm-d1-tiny/model.safetensors",
                     "exlm-d5-tiny/model.safetensors", "exlm-tiny-s4/model.safetensors",
                     "mlm-d1-tiny-s4/model.safetensors", "exlm-d5-tiny-s4/model.safetensors",
                     "details.tar.gz", "manifest.json"}  # fmt: skip
    for path in files:
        assert path.stat().st_size <= MAX_FILE
        assert len(path.relative_to(out).parts) <= 3
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+", part) for part in path.relative_to(out).parts)
    for name in ("exlm-tiny", "mlm-d1-tiny", "exlm-d5-tiny"):
        with safetensors.safe_open(out / name / "model.safetensors", "pt") as handle:
            dtypes = {str(handle.get_slice(k).get_dtype()) for k in handle.keys()}
        assert dtypes == {"F16"}
    with tarfile.open(out / "details.tar.gz") as tar:
        members = set(tar.getnames())
    expected = {"exlm-tiny/checkpoint/config.json", "mlm-d1-tiny/checkpoint/metadata.json",
                "exlm-tiny/log.jsonl", "logs/exlm.log", "bench/dag_loss_bf16.md",
                "bench/pretrain_step.json", "plan.json", "status.json", "env.json",
                "report.md", "curves.png"}  # fmt: skip
    assert expected <= members, expected - members

    runs = _run("unpack", str(out), str(unpacked))
    assert runs.returncode == 0, runs.stderr[-3000:]
    report = (unpacked / "report.md").read_text()
    assert re.search(r"\| exlm \| finished \| 8 / 8 \(checkpoint at 8\) \|", report)
    meta = {}
    for arm, objective, weight in (("exlm", "exlm", 0), ("mlm-d1", "mlm", 1),
                                   ("exlm-d5", "exlm", 5)):
        _, config, meta[arm] = load_checkpoint(unpacked / f"{arm}-tiny" / "checkpoint")
        assert config.objective == objective and config.d_model == 64
        assert meta[arm]["dtype"] == "float16" and meta[arm]["steps"] == 8
        assert meta[arm]["gpu_env"]["device"] == "cpu (no CUDA device)"
        assert meta[arm]["pretrain_args"]["prepared"] == str(prepared)
        assert meta[arm]["pretrain_args"]["aux_weight"] == weight
    # the descriptor arms' targets are the fast set computed on the "GPU host"
    assert meta["exlm-d5"]["descriptors"]["kind"] == "rdkit2d_fast"
    assert config.n_descriptors == len(meta["exlm-d5"]["descriptors"]["names"])
    # side by side means the same batches: the same tokens after the same steps
    assert meta["exlm"]["tokens_seen"] == meta["mlm-d1"]["tokens_seen"] > 0
    _, _, snapshot = load_checkpoint(unpacked / "exlm-tiny-s4" / "checkpoint")
    assert snapshot["steps"] == 4 and snapshot["snapshot"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["missing"] == []


def test_weights_past_one_calls_64_mib_are_left_for_a_further_call():
    import gpu_gather

    small = 15_686_012  # a `small` ExLM checkpoint in fp16
    assert gpu_gather.fits(3 * small, small)  # four come back in one call
    assert not gpu_gather.fits(4 * small, small)  # a fifth would pass 64 MiB with the rest
    assert not gpu_gather.fits(0, MAX_FILE + 1)


def test_a_check_cut_short_by_the_call_is_no_verdict(tmp_path):
    # a kernel check skipped or timed out for lack of call time once stopped the lease's
    # training as "the Triton kernel differs from the reference"
    from gpu_common import run_logged, verdict

    assert verdict(run_logged("no time", ["true"], tmp_path / "a.log", timeout=5)) == (
        "not run (no time left)"
    )
    assert verdict(run_logged("fails", [sys.executable, "-c", "raise SystemExit(1)"],
                              tmp_path / "b.log", timeout=60)) == "failed"  # fmt: skip
    assert verdict(run_logged("passes", ["true"], tmp_path / "c.log", timeout=60)) == "passed"
    assert verdict(124) == "timed out"


def test_unpack_refuses_a_corrupt_folder(tmp_path):
    import gpu_gather

    (tmp_path / "a.txt").write_text("x")
    manifest = {"files": {"a.txt": {"bytes": 1, "sha256": "0" * 64}}, "missing": []}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SystemExit, match="sha256 differs"):
        gpu_gather.unpack(tmp_path, tmp_path / "dest")


def test_small_checkpoint_fits_one_file_in_fp16(tmp_path):
    """A `small` checkpoint must come back in one file: <= 16 MiB in fp16."""
    import torch

    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.model import ExLMConfig, ExLMModel
    from exlm_chem.model.checkpoint import save_checkpoint

    tok = SmilesTokenizer()
    model = ExLMModel(ExLMConfig.preset("small", vocab_size=len(tok)))
    save_checkpoint(tmp_path, model, model.config, tok.tokens, {}, dtype=torch.float16)
    size = (tmp_path / "model.safetensors").stat().st_size
    assert 14 * 2**20 < size <= MAX_FILE, size


@pytest.mark.parametrize("steps_from", ["budget", "fixed"])
def test_run_commands_parse_with_the_pretrain_cli(tmp_path, steps_from):
    """The flags `start` hands to `exlm-chem pretrain` exist there (no typo reaches the GPU)."""
    import gpu_start
    from gpu_common import Work

    from exlm_chem.cli import build_parser

    argv = ["start", "--prepared", "P", "--work", str(tmp_path), "--compile"]
    if steps_from == "fixed":
        argv += ["--max-steps", "120"]
    import gpu_pretrain

    argv += ["--arm", "exlm-d10 exlm --aux-weight 10 --mask-ratio 0.3", "--arm", "mlm mlm"]
    args = gpu_pretrain.parser().parse_args(argv)
    steps = gpu_start.plan_steps(args, Work(tmp_path))
    arms = gpu_start.arms_of(args)
    cmd = gpu_start.run_command(args, Work(tmp_path), arms[0], arms, steps)
    parsed = build_parser().parse_args(cmd[3:])  # past "python -m exlm_chem.cli"
    assert (parsed.prepared, parsed.preset, parsed.objective) == ("P", "small", "exlm")
    assert parsed.out == str(tmp_path / "runs" / "exlm-d10") and parsed.compile
    assert (parsed.aux_weight, parsed.mask_ratio) == (10, 0.3)
    assert parsed.max_tokens == 65536 and parsed.device == "cuda" and parsed.num_workers == 6
    if steps_from == "fixed":
        assert parsed.max_steps == 120 and parsed.budget_minutes is None
        assert parsed.checkpoint_every == round(120 * 3 / 16)
    else:
        assert parsed.max_steps is None and parsed.budget_minutes == 16.0
        assert parsed.budget_from == [str(tmp_path / "runs" / "mlm")]


@pytest.mark.parametrize("text", ["exlm", "a/b exlm", "x bert", "x/ mlm"])
def test_a_malformed_arm_is_refused(text):
    from gpu_common import parse_arm

    with pytest.raises(ValueError, match="arm"):
        parse_arm(text)
