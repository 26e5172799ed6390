"""TextTokenizer: fixed special ids, framing, pair truncation, unknowns, save/load."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from exlm_chem.data.tokenizer import SPECIAL_TOKENS
from exlm_chem.text.tokenizer import TextTokenizer, pair_lengths

CORPUS = [
    "The cat sat on the mat.",
    "A dog barked at the cat!",
    "Cats and dogs are friends, said the old teacher.",
    "The teacher reads a long book every morning.",
    "My sister paints the green tree in the park.",
] * 4


@pytest.fixture(scope="module")
def tok() -> TextTokenizer:
    return TextTokenizer.train(CORPUS, vocab_size=120, min_frequency=1)


def test_trained_vocabulary_puts_the_specials_at_ids_0_to_4(tok):
    assert tok.tokens[:5] == ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"]
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert len(tok) == len(tok.tokens) <= 120
    assert len(set(tok.tokens)) == len(tok.tokens)
    assert "the" in tok.tokens and "cat" in tok.tokens  # frequent words are whole pieces


def test_encode_frames_and_truncation_keeps_the_final_sep(tok):
    pieces = tok.tokenize("The cat sat on the mat.")
    assert pieces == ["the", "cat", "sat", "on", "the", "mat", "."]
    ids = [tok.tokens.index(p) for p in pieces]
    assert tok.encode("The cat sat on the mat.") == [0, *ids, 2]
    assert tok.encode("The cat sat on the mat.", max_length=5) == [0, *ids[:3], 2]
    assert tok.encode("The cat sat on the mat.", add_special_tokens=False) == ids
    assert tok.encode("", max_length=2) == [0, 2]
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("the cat", max_length=1)
    with pytest.raises(TypeError, match="str"):
        tok.encode(None)
    assert tok.decode(tok.encode("The cat sat on the mat.")) == "the cat sat on the mat."


def test_encode_pair_layout_and_longest_first_truncation(tok):
    a = tok.encode("the cat sat on the mat . the dog", add_special_tokens=False)  # 9 pieces
    b = tok.encode("the old teacher", add_special_tokens=False)  # 3 pieces
    assert (len(a), len(b)) == (9, 3)
    assert tok.encode_pair("the cat sat on the mat . the dog", "the old teacher") == \
        [0, *a, 2, *b, 2]
    # budget 11 - 3 specials = 8: the short segment stays whole, the long one gives 4 up
    assert tok.encode_pair("the cat sat on the mat . the dog", "the old teacher",
                           max_length=11) == [0, *a[:5], 2, *b, 2]
    # budget 4: both are long now, so they end up equal
    assert tok.encode_pair("the cat sat on the mat . the dog", "the old teacher",
                           max_length=7) == [0, *a[:2], 2, *b[:2], 2]
    with pytest.raises(ValueError, match=">= 3"):
        tok.encode_pair("a", "b", max_length=2)


def _hf_longest_first(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """The reference procedure: drop one token at a time from the longer (b on ties)."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_pair_lengths_matches_one_at_a_time_truncation():
    for la in range(13):
        for lb in range(13):
            for budget in range(16):
                assert pair_lengths(la, lb, budget) == _hf_longest_first(la, lb, budget), \
                    (la, lb, budget)


def test_special_token_text_and_unseen_characters_become_counted_unk(tok):
    tok.reset_unknown_counts()
    ids = tok.encode("the [MASK] cat ☃ [SEP]")
    cat = tok.tokens.index("cat")
    assert ids == [0, tok.tokens.index("the"), 3, cat, 3, 3, 2]
    assert tok.unknown_token_counts == {"[MASK]": 1, "☃": 1, "[SEP]": 1}
    tok.reset_unknown_counts()
    assert not tok.unknown_token_counts


def test_encode_batch_equals_one_by_one(tok):
    firsts = ["The cat sat.", "", "A dog barked at the cat every morning in the park!"]
    seconds = ["the old teacher", "my sister", ""]
    singles = tok.encode_batch(firsts, max_length=6)
    assert [s.tolist() for s in singles] == [tok.encode(t, max_length=6) for t in firsts]
    pairs = tok.encode_batch(firsts, seconds, max_length=9)
    assert [p.tolist() for p in pairs] == [tok.encode_pair(a, b, max_length=9)
                                           for a, b in zip(firsts, seconds, strict=True)]
    assert all(p.dtype == np.int64 for p in pairs)
    with pytest.raises(ValueError, match="segments"):
        tok.encode_batch(firsts, seconds[:2])


def test_save_and_load_round_trip(tok, tmp_path):
    path = tok.save(tmp_path)
    assert path == tmp_path / "tokenizer.json"
    again = TextTokenizer.from_file(tmp_path)
    assert again.tokens == tok.tokens
    text = "Cats and dogs are friends, said my sister."
    assert again.encode_pair(text, "the cat", max_length=12) == \
        tok.encode_pair(text, "the cat", max_length=12)
    with pytest.raises(FileNotFoundError):
        TextTokenizer.from_file(tmp_path / "nope.json")


def test_a_tokenizer_json_with_other_special_ids_is_refused(tok, tmp_path):
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    vocab["[PAD]"], vocab["[CLS]"] = vocab["[CLS]"], vocab["[PAD]"]  # BERT order: [PAD] = 0
    for entry in data["added_tokens"]:
        entry["id"] = vocab[entry["content"]]
    bad = tmp_path / "bert_order.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"id 0 is '\[PAD\]', not '\[CLS\]'"):
        TextTokenizer.from_file(bad)


def test_cased_training_keeps_case():
    cased = TextTokenizer.train(CORPUS, vocab_size=120, min_frequency=1, lowercase=False)
    assert cased.tokenize("The cat")[0] == "The"
    assert cased.tokens[:5] == list(SPECIAL_TOKENS)
    with pytest.raises(ValueError, match="vocab_size"):
        TextTokenizer.train(CORPUS, vocab_size=5)


def test_importing_the_text_tokenizer_pulls_no_torch():
    code = ("import sys, exlm_chem.text, exlm_chem.text.tokenizer, exlm_chem.text.glue; "
            "assert 'torch' not in sys.modules and 'tokenizers' not in sys.modules, "
            "sorted(m for m in sys.modules if m in ('torch', 'tokenizers'))")
    subprocess.run([sys.executable, "-c", code], check=True)
