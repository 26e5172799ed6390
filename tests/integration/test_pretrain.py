"""Pre-training end to end on real SMILES with the tiny preset."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from safetensors.torch import load_file

from exlm_chem.corpus import read_smiles_file
from exlm_chem.pretrain import PretrainArgs, pretrain
from exlm_chem.tokenizer import SmilesTokenizer


def _args(corpus, out, **kw) -> PretrainArgs:
    base = dict(
        corpus=[str(corpus)],
        out=str(out),
        preset="tiny",
        max_steps=300,
        max_tokens=1024,
        lr=3e-3,
        warmup_steps=30,
        corpus_limit=400,
        valid_size=40,
        valid_every=1000,
        checkpoint_every=1000,
        log_every=10,
        hygiene=False,
        progress=False,
        seed=0,
    )
    base.update(kw)
    return PretrainArgs(**base)


def _log(out):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def corpus(pretrain_dir):
    return pretrain_dir / "moses_train.smi.gz"


@pytest.mark.slow
def test_tiny_exlm_learns_on_real_smiles(corpus, tmp_path):
    args = _args(
        corpus,
        tmp_path,
        max_steps=400,
        max_tokens=2048,
        corpus_limit=2000,
        valid_size=100,
        log_every=1,
    )
    result = pretrain(args)
    assert result["step"] == 400
    losses = [r["loss"] for r in _log(tmp_path) if "loss" in r]
    first, last = sum(losses[:3]) / 3, sum(losses[-20:]) / 20
    assert first / last > 3.0, (first, last)
    val = result["last_validation"]
    assert val["valid_invalid_paths"] == 0 and result["invalid_paths"] == 0
    # chance: a uniform guess over the vocabulary; the stronger bar is always guessing the
    # corpus's most frequent token (about 30%: "C")
    tok = SmilesTokenizer()
    counts = Counter(t for s in read_smiles_file(corpus, limit=2000) for t in tok.tokenize(s))
    majority = counts.most_common(1)[0][1] / sum(counts.values())
    assert val["valid_accuracy"] > majority > 50 / len(tok), (val, majority)


def test_mlm_twin_reads_the_same_batches(corpus, tmp_path):
    a = pretrain(_args(corpus, tmp_path / "exlm", max_steps=6, log_every=1))
    b = pretrain(_args(corpus, tmp_path / "mlm", objective="mlm", max_steps=6, log_every=1))
    assert a["tokens_seen"] == b["tokens_seen"] > 0
    steps_a = [(r["step"], r["epoch"]) for r in _log(tmp_path / "exlm") if "loss" in r]
    steps_b = [(r["step"], r["epoch"]) for r in _log(tmp_path / "mlm") if "loss" in r]
    assert steps_a == steps_b


@pytest.mark.parametrize("objective", ["exlm", "mlm"])
def test_resume_continues_exactly(corpus, tmp_path, objective):
    n, k = 14, 6
    kw = dict(objective=objective, max_steps=n, log_every=1, checkpoint_every=k, lr=1e-3)
    pretrain(_args(corpus, tmp_path / "straight", **kw))
    # a run stopped after k steps (its checkpoint at k), then resumed to n
    pretrain(_args(corpus, tmp_path / "resumed", **kw, stop_at_step=k))
    pretrain(_args(corpus, tmp_path / "resumed", **kw), resume=True)
    straight = load_file(str(tmp_path / "straight" / "checkpoint" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "resumed" / "checkpoint" / "model.safetensors"))
    assert straight.keys() == resumed.keys()
    for name in straight:
        assert torch.equal(straight[name], resumed[name]), name
    tail = [r["loss"] for r in _log(tmp_path / "resumed") if "loss" in r][-(n - k) :]
    assert tail == [r["loss"] for r in _log(tmp_path / "straight") if "loss" in r][k:]


def test_fragment_masking_trains(corpus, tmp_path):
    result = pretrain(_args(corpus, tmp_path, max_steps=4, masking="fragment", corpus_limit=100))
    assert result["step"] == 4 and result["invalid_paths"] == 0


@pytest.mark.parametrize("objective", ["exlm", "mlm"])
def test_repeated_mlm_pretrains(corpus, tmp_path, objective):
    args = _args(corpus, tmp_path, max_steps=3, repeat_k=3, objective=objective, corpus_limit=100)
    result = pretrain(args)
    assert result["step"] == 3 and result["invalid_paths"] == 0
