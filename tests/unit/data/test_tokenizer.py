"""Tests for exlm_chem.data.tokenizer (SMILES tokenizer and the packaged vocabulary)."""

from __future__ import annotations

import gzip
import importlib.util
import pickle
import random
import re
import subprocess
import sys
from collections import Counter
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.data.moleculenet_sets import DATASETS
from exlm_chem.data.tokenizer import (
    SCHWALLER_PATTERN,
    SPECIAL_TOKENS,
    EncodedBatch,
    SmilesTokenizer,
    tokenize_smiles,
)

REPO = Path(__file__).resolve().parents[3]
MOLECULENET_COLUMNS = {
    name: spec.smiles_column
    for name, spec in sorted(DATASETS.items())
    if spec.task_type == "classification"
}
# the literal regex plus a catch-all, i.e. "Schwaller, but never drop a character"
SCHWALLER_RE = re.compile(SCHWALLER_PATTERN)
SCHWALLER_FALLBACK_RE = re.compile(SCHWALLER_PATTERN[:-1] + "|.)", re.DOTALL)


@pytest.fixture(scope="module")
def tok() -> SmilesTokenizer:
    return SmilesTokenizer()


@pytest.fixture(scope="module")
def corpus_sample(moleculenet_dir: Path, pretrain_dir: Path) -> list[str]:
    """Deterministic sample: 2,000 rows per MoleculeNet set, 5,000 MOSES, 2,000 ChEMBL lines."""
    sample: list[str] = []
    rng = np.random.default_rng(0)
    for name, column in MOLECULENET_COLUMNS.items():
        frame = pd.read_csv(
            moleculenet_dir / f"{name}.csv.gz", usecols=[column], dtype=str, keep_default_na=False
        )
        rows = np.sort(rng.choice(len(frame), size=min(2000, len(frame)), replace=False))
        sample.extend(frame[column].iloc[rows].tolist())
    for name, count in (("moses_train", 5000), ("chembl_mix", 2000)):
        with gzip.open(pretrain_dir / f"{name}.smi.gz", "rt", encoding="utf-8") as handle:
            sample.extend(line.rstrip("\n") for line in islice(handle, count))
    return sample


@pytest.fixture(scope="module")
def parsable_sample(corpus_sample: list[str]) -> list[str]:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return [s for s in corpus_sample if Chem.MolFromSmiles(s) is not None]


# ---------------------------------------------------------------------- tokenising
@pytest.mark.parametrize(
    ("smiles", "tokens"),
    [
        (
            "C[C@@H](N)C(=O)O",
            ["C", "[C@@H]", "(", "N", ")", "C", "(", "=", "O", ")", "O"],
        ),
        (
            "[NH3+]CC(=O)[O-].[Na+]",
            ["[NH3+]", "C", "C", "(", "=", "O", ")", "[O-]", ".", "[Na+]"],
        ),
        (
            "ClC(Br)c1ccccc1Cl",
            ["Cl", "C", "(", "Br", ")", "c", "1", "c", "c", "c", "c", "c", "1", "Cl"],
        ),
        (
            "[2H]C([13CH3])[C@H]1CC1",
            ["[2H]", "C", "(", "[13CH3]", ")", "[C@H]", "1", "C", "C", "1"],
        ),
        ("C1CC%10CC%101", ["C", "1", "C", "C", "%10", "C", "C", "%10", "1"]),
        ("F/C=C\\F", ["F", "/", "C", "=", "C", "\\", "F"]),
        (
            "[Ca++].[O-]S(=O)(=O)[O-]",
            ["[Ca++]", ".", "[O-]", "S", "(", "=", "O", ")", "(", "=", "O", ")", "[O-]"],
        ),
        (
            "O=[N+]([O-])c1c[nH]cn1",
            ["O", "=", "[N+]", "(", "[O-]", ")", "c", "1", "c", "[nH]", "c", "n", "1"],
        ),
        ("CC#N", ["C", "C", "#", "N"]),
        ("B1OCCO1", ["B", "1", "O", "C", "C", "O", "1"]),
        ("*C(=O)I", ["*", "C", "(", "=", "O", ")", "I"]),
        ("", []),
    ],
)
def test_tokenize_exact(tok: SmilesTokenizer, smiles: str, tokens: list[str]) -> None:
    assert tok.tokenize(smiles) == tokens
    assert tokenize_smiles(smiles) == tokens
    assert SCHWALLER_RE.findall(smiles) == tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("CCx", ["C", "C", "x"]),  # a character the regex does not cover
        ("C%1C", ["C", "%", "1", "C"]),  # '%' without two digits
        ("C[]C", ["C", "[", "]", "C"]),  # empty brackets
        ("[CC", ["[", "C", "C"]),  # unclosed bracket
        ("C C\n", ["C", " ", "C", "\n"]),  # whitespace is kept too
        ("Cé", ["C", "é"]),
    ],
)
def test_uncovered_characters_become_tokens(
    tok: SmilesTokenizer, text: str, tokens: list[str]
) -> None:
    assert tok.tokenize(text) == tokens
    assert "".join(tok.tokenize(text)) == text


def test_fast_pattern_equals_literal_schwaller_on_corpus(corpus_sample: list[str]) -> None:
    covered = 0
    for smiles in corpus_sample:
        literal = SCHWALLER_RE.findall(smiles)
        if "".join(literal) == smiles:  # the literal regex covers the whole string
            covered += 1
            assert tokenize_smiles(smiles) == literal, smiles
    assert covered >= len(corpus_sample) - 20  # only a few odd rows (e.g. "FAIL") are not


def test_fast_pattern_equals_literal_with_fallback_on_fuzz() -> None:
    """On arbitrary strings ours equals the literal regex extended by a catch-all '.'."""
    alphabet = list("[]BrClCc%0123456789()=#@+-/\\.Hnso*$?>~:NOSPFI xé\n")
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert tokenize_smiles(text) == SCHWALLER_FALLBACK_RE.findall(text), repr(text)
        assert "".join(tokenize_smiles(text)) == text


# ---------------------------------------------------------------------- vocabulary
def test_special_ids_are_fixed(tok: SmilesTokenizer) -> None:
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.tokens[:5] == ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]
    assert list(SPECIAL_TOKENS) == tok.tokens[:5]
    assert tok.special_ids == frozenset({0, 1, 2, 3, 4})
    assert [tok.token_to_id[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert tok.convert_tokens_to_ids("[MASK]") == 4


def test_packaged_vocabulary(tok: SmilesTokenizer) -> None:
    lines = (REPO / "exlm_chem" / "data" / "vocab.txt").read_text("utf-8").split("\n")
    assert lines[-1] == ""
    assert lines[:-1] == tok.tokens
    assert len(tok) == tok.vocab_size == len(tok.tokens) == len(set(tok.tokens))
    assert all(tok.token_to_id[t] == i for i, t in enumerate(tok.tokens))
    # the two most frequent tokens of the corpus are aromatic and aliphatic carbon
    assert tok.tokens[5:7] == ["c", "C"]
    for needed in ["Cl", "Br", "[C@@H]", "[NH3+]", "[Na+]", "[O-]", "%10", "/", "\\", ".", "[Pt]"]:
        assert needed in tok.token_to_id, needed


def test_build_vocab_orders_by_count_then_alphabet() -> None:
    spec = importlib.util.spec_from_file_location(
        "build_vocab", REPO / "scripts" / "build_vocab.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts = Counter({"c": 3, "C": 3, "O": 5, "[Na+]": 1, "(": 3})
    assert module.vocabulary(counts) == [*SPECIAL_TOKENS, "O", "(", "C", "c", "[Na+]"]


# ---------------------------------------------------------------------- encode / decode
def test_encode_exact_ids(tok: SmilesTokenizer) -> None:
    ids = tok.encode("CCO")
    c, o = tok.token_to_id["C"], tok.token_to_id["O"]
    assert ids == [0, c, c, o, 2]
    assert tok.encode("CCO", add_special_tokens=False) == [c, c, o]
    assert tok.encode("") == [0, 2]
    assert tok.decode(ids) == "CCO"
    assert tok.decode(ids, skip_special_tokens=False) == "[CLS]CCO[SEP]"
    assert tok.decode(np.array([*ids, 1, 1])) == "CCO"


def test_round_trip_on_corpus_sample(tok: SmilesTokenizer, parsable_sample: list[str]) -> None:
    assert len(parsable_sample) > 19000  # 20,513 rows sampled, a few unparsable
    tok.reset_unknown_counts()
    for smiles in parsable_sample:
        assert "".join(tok.tokenize(smiles)) == smiles
        assert tok.decode(tok.encode(smiles)) == smiles, smiles
    assert tok.unknown_token_counts == Counter()


def test_batch_encode_matches_encode_on_corpus_sample(
    tok: SmilesTokenizer, corpus_sample: list[str]
) -> None:
    for max_length in (None, 30):
        batch = tok.batch_encode(corpus_sample, max_length=max_length)
        assert batch.input_ids.dtype == np.int64 and batch.lengths.dtype == np.int64
        for row, smiles in enumerate(corpus_sample):
            expected = tok.encode(smiles, max_length=max_length)
            assert batch.lengths[row] == len(expected)
            assert batch.input_ids[row, : len(expected)].tolist() == expected, smiles
            assert (batch.input_ids[row, len(expected) :] == tok.pad_id).all()


def test_batch_fast_and_fallback_paths_agree(tok: SmilesTokenizer) -> None:
    smiles = ["CC[MASK]O", "C[Xx]q", "", "[CC", "Cl%1", "c1ccccc1[Na+]", "C[]"]
    fast = tok.batch_encode(smiles)
    fast_counts = Counter(tok.unknown_token_counts)
    tok.reset_unknown_counts()
    # a non-ASCII row (and, separately, a newline) forces the one-at-a-time path
    for extra in ("Cé", "C\nC"):
        slow = tok.batch_encode([*smiles, extra])
        assert np.array_equal(slow.input_ids[:-1, : fast.input_ids.shape[1]], fast.input_ids)
        assert np.array_equal(slow.lengths[:-1], fast.lengths)
        assert slow.input_ids[-1, : slow.lengths[-1]].tolist() == tok.encode(extra)
    tok.reset_unknown_counts()
    tok.batch_encode([*smiles, "Cé"])
    assert tok.unknown_token_counts - Counter({"é": 1}) == fast_counts
    tok.reset_unknown_counts()


# ---------------------------------------------------------------------- unknown tokens
def test_unknown_tokens_are_counted(tok: SmilesTokenizer) -> None:
    tok.reset_unknown_counts()
    ids = tok.encode("C[Xx]Cq[Xx]")
    assert ids[2] == ids[4] == ids[5] == tok.unk_id
    assert tok.unknown_token_counts == Counter({"[Xx]": 2, "q": 1})
    tok.batch_encode(["q", "CC", "[Yy]q"])
    assert tok.unknown_token_counts == Counter({"[Xx]": 2, "q": 3, "[Yy]": 1})
    tok.reset_unknown_counts()
    assert tok.unknown_token_counts == Counter()
    assert tok.decode(tok.encode("C[Xx]")) == "C[UNK]"  # visible, not dropped


def test_special_token_text_is_not_a_control_token(tok: SmilesTokenizer) -> None:
    tok.reset_unknown_counts()
    assert tok.encode("C[MASK][PAD]") == [0, tok.token_to_id["C"], 3, 3, 2]
    assert tok.batch_encode(["[SEP]"]).input_ids.tolist() == [[0, 3, 2]]
    assert tok.unknown_token_counts == Counter({"[MASK]": 1, "[PAD]": 1, "[SEP]": 1})
    tok.reset_unknown_counts()


def test_strict_raises_and_names_unknown_tokens(tok: SmilesTokenizer) -> None:
    tok.reset_unknown_counts()
    with pytest.raises(ValueError, match=r"'\[Xx\]'.*'q'|'q'.*'\[Xx\]'"):
        tok.encode("C[Xx]q", strict=True)
    with pytest.raises(ValueError, match="'q'"):
        tok.batch_encode(["CC", "Cq"], strict=True)
    assert tok.unknown_token_counts == Counter()
    assert tok.encode("CC", strict=True) == tok.encode("CC")


# ---------------------------------------------------------------------- truncation
@pytest.mark.parametrize("max_length", [2, 3, 4, 7, 10, 11, 50])
def test_truncation_keeps_eos(tok: SmilesTokenizer, max_length: int) -> None:
    smiles = "CC(=O)Oc1ccccc1"  # 15 characters -> 15 tokens, 17 ids
    full = tok.encode(smiles)
    assert len(full) == 17
    ids = tok.encode(smiles, max_length=max_length)
    assert len(ids) == min(max_length, 17)
    assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id
    assert ids[:-1] == full[: len(ids) - 1]
    batch = tok.batch_encode([smiles, "C"], max_length=max_length)
    assert batch.input_ids[0, : len(ids)].tolist() == ids
    assert batch.lengths.tolist() == [len(ids), min(max_length, 3)]
    assert batch.input_ids.shape == (2, len(ids))
    assert (
        tok.encode(smiles, add_special_tokens=False, max_length=max_length)
        == full[1 : 1 + max_length][: min(max_length, 15)]
    )


@pytest.mark.parametrize("max_length", [-1, 0, 1])
def test_max_length_too_small(tok: SmilesTokenizer, max_length: int) -> None:
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("CCO", max_length=max_length)
    with pytest.raises(ValueError, match="max_length"):
        tok.batch_encode(["CCO"], max_length=max_length)


# ---------------------------------------------------------------------- batches
def test_batch_encode_padding_and_lengths(tok: SmilesTokenizer) -> None:
    c, o, n = (tok.token_to_id[t] for t in "CON")
    batch = tok.batch_encode(["CCO", "N", ""])
    assert isinstance(batch, EncodedBatch)
    assert batch.input_ids.tolist() == [
        [0, c, c, o, 2],
        [0, n, 2, 1, 1],
        [0, 2, 1, 1, 1],
    ]
    assert batch.lengths.tolist() == [5, 3, 2]
    padded = tok.batch_encode(["CCO", "N"], pad_to_multiple_of=8)
    assert padded.input_ids.shape == (2, 8)
    assert padded.input_ids[:, 5:].tolist() == [[1, 1, 1]] * 2
    bare = tok.batch_encode(["CCO", "N"], add_special_tokens=False)
    assert bare.input_ids.tolist() == [[c, c, o], [n, 1, 1]]
    assert bare.lengths.tolist() == [3, 1]
    empty = tok.batch_encode([])
    assert empty.input_ids.shape == (0, 2) and empty.lengths.shape == (0,)
    series = tok.batch_encode(pd.Series(["CCO", "N", ""]))
    assert np.array_equal(series.input_ids, batch.input_ids)
    assert tok.batch_decode(batch.input_ids) == ["CCO", "N", ""]


def test_bad_input_types(tok: SmilesTokenizer) -> None:
    for bad in (None, 3.5, b"CCO", ["CCO"]):
        with pytest.raises(TypeError, match=type(bad).__name__):
            tok.encode(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"row 1.*float"):
        tok.batch_encode(["CCO", float("nan")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="single string; wrap it in a list"):
        tok.batch_encode("CCO")
    with pytest.raises(ValueError, match="pad_to_multiple_of"):
        tok.batch_encode(["CCO"], pad_to_multiple_of=0)
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([0, tok.vocab_size])
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([-1])
    with pytest.raises(TypeError, match="float"):
        tok.decode([0, 1.0])


# ---------------------------------------------------------------------- persistence
def test_save_and_load_vocabulary(tok: SmilesTokenizer, tmp_path: Path) -> None:
    written = tok.save_vocabulary(tmp_path)
    assert written == tmp_path / "vocab.txt"
    assert SmilesTokenizer.from_file(tmp_path) == tok
    assert SmilesTokenizer(written) == tok
    other = tok.save_vocabulary(tmp_path / "other.txt")
    loaded = SmilesTokenizer.from_file(other)
    assert loaded == tok and loaded.tokens == tok.tokens
    assert loaded.encode("C[C@@H](N)C(=O)[O-].[Na+]") == tok.encode("C[C@@H](N)C(=O)[O-].[Na+]")


def test_custom_vocabulary(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_text("\n".join([*SPECIAL_TOKENS, "C", "O", "[NH4+]"]) + "\n", encoding="utf-8")
    small = SmilesTokenizer(path)
    assert small.vocab_size == 8
    assert small != SmilesTokenizer()
    assert small.encode("CO[NH4+]N") == [0, 5, 6, 7, 3, 2]
    assert small.batch_encode(["CO[NH4+]N"]).input_ids.tolist() == [[0, 5, 6, 7, 3, 2]]
    assert small.unknown_token_counts == Counter({"N": 2})
    small.reset_unknown_counts()
    # multi-character tokens missing from the vocabulary, on both batch paths
    rows = ["ClCBr", "C[Cl-]%12O", "CCl"]
    expected = [small.encode(s) for s in rows]
    assert expected[0] == [0, 3, 5, 3, 2]
    assert small.unknown_token_counts == Counter({"Cl": 2, "Br": 1, "[Cl-]": 1, "%12": 1})
    for batch_rows in (rows, [*rows, "é"]):
        small.reset_unknown_counts()
        batch = small.batch_encode(batch_rows)
        for row, ids in enumerate(expected):
            assert batch.input_ids[row, : len(ids)].tolist() == ids
        extra = Counter({"é": 1}) if len(batch_rows) > 3 else Counter()
        assert (
            small.unknown_token_counts == Counter({"Cl": 2, "Br": 1, "[Cl-]": 1, "%12": 1}) + extra
        )


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]", "C"], "special tokens"),
        ([*SPECIAL_TOKENS, "C", "O", "C"], "line 8: duplicate token 'C'"),
        ([*SPECIAL_TOKENS, "C", "", "O"], "line 7: empty"),
    ],
)
def test_bad_vocabulary_files(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)):
        SmilesTokenizer(path)
    with pytest.raises(FileNotFoundError):
        SmilesTokenizer(tmp_path / "missing.txt")


def test_pickle_round_trip(tok: SmilesTokenizer) -> None:
    fresh = SmilesTokenizer()
    fresh.encode("Cq")
    clone = pickle.loads(pickle.dumps(fresh))
    assert clone == fresh
    assert clone.unknown_token_counts == Counter({"q": 1})
    smiles = ["C[C@@H](N)C(=O)O", "[NH3+]CC(=O)[O-].[Na+]"]
    assert np.array_equal(clone.batch_encode(smiles).input_ids, tok.batch_encode(smiles).input_ids)
    assert clone.decode(clone.encode(smiles[1])) == smiles[1]


def test_module_does_not_import_torch_or_rdkit() -> None:
    code = (
        "import sys, exlm_chem.data.tokenizer as t; t.SmilesTokenizer().batch_encode(['CCO']); "
        "print(sorted(m for m in ('torch', 'rdkit', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"
