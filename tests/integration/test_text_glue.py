"""The text path end to end: ``exlm-chem text pretrain`` then ``exlm-chem text glue``.

A tiny model is pre-trained for a few dozen steps on a small English corpus written by
the test, with a WordPiece vocabulary learnt on it; it is then fine-tuned on GLUE-format
folders written by the test (the real files are read by the same code).
"""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from exlm_chem.cli import main
from exlm_chem.text.glue import GlueFormatError
from exlm_chem.text.pretrain import pack_documents, text_pretrain
from exlm_chem.text.pretrain_args import TextPretrainArgs
from exlm_chem.text.tokenizer import TextTokenizer

SUBJECTS = ["the cat", "a dog", "my friend", "the teacher", "a small bird", "the old man",
            "her sister", "the children"]
VERBS = ["sees", "likes", "reads", "finds", "watches", "follows", "hears", "paints"]
OBJECTS = ["the red ball", "a long book", "the quiet river", "an open door", "the green tree",
           "a bright star", "the big house"]
ENDINGS = ["today", "every morning", "in the park", "at night", "with joy", "again"]


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(ENDINGS)}.")


def _write_corpus(path, n_lines: int = 300, seed: int = 0):
    rng = random.Random(seed)
    lines = [" ".join(_sentence(rng) for _ in range(rng.randint(1, 3))) for _ in range(n_lines)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pair_rows(rng: random.Random, n: int) -> list[tuple[str, str, int]]:
    """(premise, hypothesis, label): label 0 when the hypothesis repeats the subject."""
    rows = []
    for _ in range(n):
        a = _sentence(rng)
        if rng.random() < 0.5:
            rows.append((a, " ".join(a.split()[:2]) + " is here.", 0))
        else:
            rows.append((a, _sentence(rng), 1))
    return rows


def _write_glue(root, seed: int = 1):
    rng = random.Random(seed)
    rte = ("entailment", "not_entailment")
    for name, n in (("train", 48), ("dev", 16)):
        body = [f"{i}\t{a}\t{b}\t{rte[y]}" for i, (a, b, y) in enumerate(_pair_rows(rng, n))]
        (root / "RTE").mkdir(parents=True, exist_ok=True)
        (root / "RTE" / f"{name}.tsv").write_text(
            "\n".join(["index\tsentence1\tsentence2\tlabel", *body]) + "\n", encoding="utf-8")
    header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              "sentence2\tscore")
    for name, n in (("train", 32), ("dev", 12)):
        body = [f"{i}\tmain-captions\tMSRvid\t2012test\t{i:04d}\tnone\tnone\t{a}\t{b}\t"
                f"{5.0 * (1 - y) - rng.random():.3f}"
                for i, (a, b, y) in enumerate(_pair_rows(rng, n))]
        (root / "STS-B").mkdir(parents=True, exist_ok=True)
        (root / "STS-B" / f"{name}.tsv").write_text("\n".join([header, *body]) + "\n",
                                                    encoding="utf-8")
    mnli = ("contradiction", "entailment", "neutral")
    header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
              "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
    (root / "MNLI").mkdir(parents=True, exist_ok=True)
    for name, n, labels in (("train", 30, 2), ("dev_matched", 9, 6), ("dev_mismatched", 6, 6)):
        extra = "\t".join(["label1", *[f"label{j}" for j in range(2, labels)], "gold_label"])
        body = []
        for i in range(n):
            a, b, gold = _sentence(rng), _sentence(rng), mnli[i % 3]
            body.append("\t".join([str(i), "1", "2", "fiction", "(a)", "(b)", "(A)", "(B)", a, b,
                                   *[gold] * (labels - 1), gold]))
        (root / "MNLI" / f"{name}.tsv").write_text(
            "\n".join([f"{header}\t{extra}", *body]) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    """A tiny ExLM (k=4) pre-trained through the CLI; returns the run directory."""
    root = tmp_path_factory.mktemp("text_pretrain")
    corpus = _write_corpus(root / "corpus.txt")
    out = root / "run"
    code = main([
        "text", "pretrain", "--corpus", str(corpus), "--out", str(out), "--train-tokenizer",
        "--vocab-size", "200", "--min-frequency", "1", "--preset", "tiny", "--max-steps", "40",
        "--max-tokens", "1024", "--max-length", "64", "--lr", "3e-3", "--warmup-steps", "5",
        "--valid-size", "8", "--valid-every", "1000", "--checkpoint-every", "1000",
        "--log-every", "1", "--no-progress",
    ])  # fmt: skip
    assert code == 0
    return out


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory):
    return _write_glue(tmp_path_factory.mktemp("glue"))


def test_pack_documents_cuts_one_stream_into_framed_chunks():
    docs = [[5, 6, 7, 8, 9], [10], [], [11, 12, 13, 14]]
    packed = pack_documents(docs, max_length=5, bos=0, eos=2)
    samples = [packed.get(i).tolist() for i in range(len(packed))]
    assert samples == [[0, 5, 6, 7, 2], [0, 8, 9, 10, 2], [0, 11, 12, 13, 2], [0, 14, 2]]
    assert packed.lengths().tolist() == [5, 5, 5, 3]
    with pytest.raises(ValueError, match="no tokens"):
        pack_documents([[], []], max_length=5, bos=0, eos=2)
    with pytest.raises(ValueError, match="max_length"):
        pack_documents(docs, max_length=2, bos=0, eos=2)


def test_text_pretraining_writes_a_complete_text_checkpoint(text_run):
    checkpoint = text_run / "checkpoint"
    tokenizer = TextTokenizer.from_file(checkpoint / "tokenizer.json")
    assert tokenizer.tokens[:5] == ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]
    assert (checkpoint / "vocab.txt").read_text().splitlines() == tokenizer.tokens
    assert TextTokenizer.from_file(text_run / "tokenizer.json").tokens == tokenizer.tokens
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["k_states"] == 4 and config["objective"] == "exlm"
    assert config["vocab_size"] == len(tokenizer) <= 200
    meta = json.loads((checkpoint / "metadata.json").read_text())
    assert meta["steps"] == 40 and meta["hygiene"]["enabled"] is False
    assert meta["invalid_paths"] == 0  # every packed sample ends in an expanded EOS
    log = [json.loads(x) for x in (text_run / "log.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if "loss" in r]
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses  # it learns


def test_format1_text_checkpoint_loads_in_the_current_layout(text_run, tmp_path):
    """A text checkpoint written before format versions is converted like a SMILES one."""
    from format1_reference import downgrade

    from exlm_chem.text.finetune import load_text_checkpoint

    current = load_text_checkpoint(text_run / "checkpoint")[2]
    old_dir = downgrade(text_run / "checkpoint", tmp_path / "old")
    raw = load_file(old_dir / "model.safetensors")
    assert not torch.equal(raw["encoder.blocks.0.attn.qkv.weight"],
                           current["blocks.0.attn.qkv.weight"])
    converted = load_text_checkpoint(old_dir)[2]
    for name, tensor in current.items():
        assert torch.equal(converted[name], tensor), name


def test_mlm_twin_resumes_exactly(text_run, tmp_path):
    corpus = _write_corpus(tmp_path / "corpus.txt", n_lines=120, seed=5)

    def args(out, **kw):
        return TextPretrainArgs(
            corpus=[str(corpus)], out=str(out), tokenizer=str(text_run / "tokenizer.json"),
            preset="tiny", objective="mlm", max_steps=8, max_tokens=512, max_length=48,
            lr=3e-3, warmup_steps=2, valid_size=4, valid_every=1000, checkpoint_every=1000,
            log_every=1, progress=False, device="cpu", **kw)

    straight = text_pretrain(args(tmp_path / "a"))
    paused = text_pretrain(args(tmp_path / "b", stop_at_step=3))
    assert paused["step"] == 3
    resumed = text_pretrain(args(tmp_path / "b"), resume=True)
    assert straight["step"] == resumed["step"] == 8
    assert straight["tokens_seen"] == resumed["tokens_seen"]
    a = load_file(tmp_path / "a" / "checkpoint" / "model.safetensors")
    b = load_file(tmp_path / "b" / "checkpoint" / "model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
    with pytest.raises(ValueError, match="exactly one of"):
        TextPretrainArgs(corpus=[str(corpus)], out=str(tmp_path / "c"))
    with pytest.raises(ValueError, match="fragment"):
        TextPretrainArgs(corpus=[str(corpus)], out=str(tmp_path / "c"), train_tokenizer=True,
                         masking="fragment")


def test_glue_cli_prints_per_seed_and_median_rte(text_run, glue_dir, tmp_path, capsys):
    report_file = tmp_path / "rte.json"
    code = main([
        "text", "glue", "--task", "rte", "--data-dir", str(glue_dir), "--model", str(text_run),
        "--seeds", "0", "1", "2", "--epochs", "2", "--lr", "1e-3", "--batch-size", "16",
        "--max-length", "64", "--json", str(report_file),
    ])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "RTE: fine-tuned on 48 train rows, scored on dev (16 rows); 3 seed(s)" in out
    assert "| seed | accuracy | best epoch |" in out
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
            for line in out.splitlines() if line.startswith("| ") and "seed |" not in line}
    per_seed = [float(rows[s]) for s in ("0", "1", "2")]
    # accuracies on 16 dev rows are multiples of 1/16; the median is the middle one
    assert all(abs(v * 16 / 100 - round(v * 16 / 100)) < 1e-9 for v in per_seed)
    assert float(rows["median"]) == sorted(per_seed)[1]
    report = json.loads(report_file.read_text())
    assert report["task"] == "rte" and report["n_train"] == 48
    assert report["median"]["dev"]["accuracy"] == pytest.approx(sorted(per_seed)[1] / 100)
    assert [len(s["history"]) for s in report["seeds"]] == [2, 2, 2]


def test_glue_regression_and_two_dev_sets(text_run, glue_dir):
    from exlm_chem.presets import FinetuneSettings
    from exlm_chem.text.finetune import format_glue_report, run_glue

    settings = FinetuneSettings(epochs=2, batch_size=16, lr=1e-3, weight_decay=0.1,
                                clip_norm=0.0)
    stsb = run_glue("sts-b", glue_dir, text_run / "checkpoint", seeds=[0], settings=settings,
                    max_length=64, device="cpu")
    scores = stsb.seeds[0].scores["dev"]
    assert list(scores) == ["spearman", "pearson"]
    assert all(-1.0 <= v <= 1.0 for v in scores.values())
    assert stsb.median == {"dev": scores}
    mnli = run_glue("mnli", glue_dir, text_run, seeds=[3], max_train=20, max_length=64,
                    settings=dataclasses.replace(settings, epochs=1), device="cpu")
    assert mnli.n_train == 20 and mnli.n_eval == {"matched": 9, "mismatched": 6}
    table = format_glue_report(mnli)
    assert "| seed | matched accuracy | mismatched accuracy | best epoch |" in table
    matched = mnli.seeds[0].scores["matched"]["accuracy"]
    assert round(matched * 9) == pytest.approx(matched * 9, abs=1e-9)


def test_malformed_glue_rows_stop_the_cli_with_line_numbers(text_run, glue_dir, tmp_path):
    bad = tmp_path / "glue"
    (bad / "RTE").mkdir(parents=True)
    good = (glue_dir / "RTE" / "train.tsv").read_text().splitlines()
    good[3] = good[3].rsplit("\t", 1)[0]  # line 4 loses its label column
    good[6] = good[6].rsplit("\t", 1)[0] + "\tmaybe"  # line 7 gets an unknown label
    (bad / "RTE" / "train.tsv").write_text("\n".join(good) + "\n")
    (bad / "RTE" / "dev.tsv").write_text((glue_dir / "RTE" / "dev.tsv").read_text())
    cmd = ["text", "glue", "--task", "rte", "--data-dir", str(bad), "--model", str(text_run),
           "--seeds", "0", "--epochs", "1", "--max-length", "32"]
    with pytest.raises(GlueFormatError) as info:
        main(cmd)
    assert [r.line for r in info.value.rows] == [4, 7]
    assert "line 4: expected 4 tab-separated columns, found 3" in str(info.value)
