"""Hypothesis fuzz: SMILES-like text and arbitrary Unicode (lone surrogates included) through
the tokenizer, ``check_smiles`` and ``predict``: nothing crashes and rows stay aligned.

Each property runs ``FUZZ_EXAMPLES`` (2,000) examples, derandomised so that CI is
reproducible; ``predict``, whose every example runs the fitted model on its rows, runs
``PREDICT_EXAMPLES`` of the same rows (the input space is the cheap properties' to cover;
its property is that the rows stay aligned). ``pytest --hypothesis-show-statistics``
prints the counts.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exlm_chem.data.featurize import check_smiles
from exlm_chem.data.tokenizer import SmilesTokenizer

FUZZ_EXAMPLES = 2000
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PREDICT_EXAMPLES = 300

SMILES_CHARS = "CcNnOoSsPFIBrl()[]=#-+0123456789%@/\\.*H: \n\t\u00e9\u2003\ud800\x00"
PIECES = [
    "c1ccccc1", "CC(=O)O", "[nH]", "[NH3+]", "[O-]", "[C@@H]", "[13CH4]", "[Uuo]", "Cl", "Br",
    "%10", "[MASK]", "[PAD]", "C", "N", "O", "(", ")", "=", "1", " ", "\n", "ring",
]  # fmt: skip
# characters of SMILES (and their neighbours) one at a time, or whole familiar pieces; a
# character-level alphabet keeps generation cheap
smiles_like = st.one_of(st.text(alphabet=SMILES_CHARS, max_size=40),
                        st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
unicode_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=30)
any_text = st.one_of(smiles_like, unicode_text)
other_objects = st.sampled_from([None, 42, 3.5, math.nan, b"CCO", ("C",)])
rows = st.lists(st.one_of(any_text, any_text, any_text, other_objects), min_size=1, max_size=5)

TOKENIZER = SmilesTokenizer()
SENTINEL = "c1ccc(O)cc1C(=O)N"  # a known molecule placed among the fuzzed rows


@FUZZ
@given(texts=st.lists(any_text, min_size=1, max_size=4))
def test_tokenizer_loses_nothing_and_batches_like_single_rows(texts):
    batch = TOKENIZER.batch_encode(texts)
    assert batch.input_ids.shape[0] == len(texts) == batch.lengths.size
    share = TOKENIZER.unknown_fraction(texts)
    assert ((share >= 0) & (share <= 1)).all()
    for i, text in enumerate(texts):
        assert "".join(TOKENIZER.tokenize(text)) == text
        ids = TOKENIZER.encode(text)
        assert ids[0] == TOKENIZER.bos_id and ids[-1] == TOKENIZER.eos_id
        assert batch.input_ids[i, : batch.lengths[i]].tolist() == ids
        assert max(ids) < TOKENIZER.vocab_size


@FUZZ
@given(values=rows)
def test_check_smiles_marks_every_row_and_never_raises(values):
    checked = check_smiles(values)
    assert checked.valid.shape == (len(values),) and len(checked.reasons) == len(values)
    for value, ok, reason in zip(values, checked.valid, checked.reasons, strict=True):
        assert (reason is None) == bool(ok)
        if ok:  # what is let through: one word of encodable text (surrounding whitespace
            # is stripped) whose canonical form is one word too
            assert isinstance(value, str) and not re.search(r"\s", value.strip())
            value.encode("utf-8")
            assert not re.search(r"\s", checked.canonical[values.index(value)])
        else:
            assert isinstance(reason, str) and reason


@pytest.fixture(scope="module")
def reference(fitted_classifier):
    return fitted_classifier.predict_proba([SENTINEL])[0]


@pytest.mark.slow
@settings(FUZZ, max_examples=PREDICT_EXAMPLES)
@given(values=rows, position=st.integers(min_value=0, max_value=5))
def test_predict_gives_one_aligned_row_per_input(fitted_classifier, reference, values,
                                                  position):
    position = min(position, len(values))
    values = [*values[:position], SENTINEL, *values[position:]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # [UNK]-heavy rows are warned about, as they should
        p = fitted_classifier.predict_proba(values)
    valid = check_smiles(values).valid
    assert p.shape == (len(values), 2)
    assert np.isnan(p[~valid]).all() and np.isfinite(p[valid]).all()
    np.testing.assert_allclose(p[valid].sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(p[position], reference, atol=1e-5)  # rows did not shift
