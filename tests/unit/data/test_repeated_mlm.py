"""Repeated MLM: the transform, its masking statistics (p and p**k) and E.1's entropy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from exlm_chem.analysis.repeated_mlm import fully_masked_entropy
from exlm_chem.data.collate import IGNORE_INDEX, SpecialIds
from exlm_chem.data.corpus import read_smiles_file
from exlm_chem.data.repeated_mlm import (
    RepeatedBatch,
    corruption_stats,
    mask_repeated,
    repeat_tokens,
    repeated_mlm_collate,
)
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.train.objectives import exlm_loss, mlm_loss

SPECIAL = SpecialIds(bos=0, pad=1, eos=2, mask=4)


@pytest.fixture(scope="module")
def corpus_ids(pretrain_dir):
    tok = SmilesTokenizer()
    smiles = read_smiles_file(pretrain_dir / "moses_test.smi.gz", limit=1500)
    return [np.array(tok.encode(s), dtype=np.int64) for s in smiles]


def _model(objective: str) -> ExLMModel:
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", len(SmilesTokenizer()), objective=objective)
    model = ExLMModel(config)
    with torch.no_grad():  # wide weights: entropies that differ from token to token
        for p in model.parameters():
            p.normal_(0.0, 1.0)
    return model.eval()


def test_repeat_tokens_repeats_only_ordinary_tokens():
    assert repeat_tokens([0, 7, 8, 2], 3).tolist() == [0, 7, 7, 7, 8, 8, 8, 2]
    assert repeat_tokens(np.array([0, 7, 2]), 1).tolist() == [0, 7, 2]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            repeat_tokens([0, 7, 2], bad)


def test_positions_and_labels(corpus_ids):
    rng = np.random.default_rng(0)
    ids = corpus_ids[0]
    n = ids.size - 2
    rep = mask_repeated(ids, 3, 0.4, rng, SPECIAL)
    sample, cm = rep.sample, rep.copy_masked
    repeated = repeat_tokens(ids, 3)
    assert cm.shape == (n, 3)
    assert sample.input_ids.size == 2 + 3 * n
    expected_positions = [1 + 3 * i + j for i in range(n) for j in range(3) if cm[i, j]]
    assert sample.masked_positions.tolist() == expected_positions
    assert (sample.input_ids[sample.masked_positions] == SPECIAL.mask).all()
    # each label is the original token of the copy, i.e. ids[i + 1] for token i
    assert sample.masked_targets.tolist() == [ids[1 + (p - 1) // 3] for p in expected_positions]
    keep = np.ones(repeated.size, dtype=bool)
    keep[sample.masked_positions] = False
    assert (sample.input_ids[keep] == repeated[keep]).all()
    assert sample.input_ids[0] == SPECIAL.bos and sample.input_ids[-1] == SPECIAL.eos

    batch = repeated_mlm_collate([ids, corpus_ids[1]], 3, 0.4, rng, SPECIAL).batch
    labels = batch.labels[0].numpy()
    first = batch.input_ids[0].numpy()
    assert ((labels != IGNORE_INDEX) == (first == SPECIAL.mask)).all()
    assert batch.pos_original[0, : 2 + 3 * n].tolist() == list(range(2 + 3 * n))
    assert not batch.pos_copy.any()


@pytest.mark.parametrize(("p", "k"), [(0.15, 1), (0.387, 2), (0.622, 4), (0.789, 8), (0.5, 3)])
def test_corrupted_share_matches_p_to_the_k(corpus_ids, p, k):
    rng = np.random.default_rng([11, k])
    batches = [repeated_mlm_collate(corpus_ids[i : i + 100], k, p, rng, SPECIAL)
               for i in range(0, len(corpus_ids), 100)]
    stats = corruption_stats([cm for b in batches for cm in b.copy_masked], p)
    assert stats.n_tokens > 30_000
    assert stats.expected_share == pytest.approx(p**k)
    assert abs(stats.fully_masked_share - p**k) < 4 * stats.standard_error
    n_copies = stats.n_tokens * k
    assert abs(stats.masked_share - p) < 4 * math.sqrt(p * (1 - p) / n_copies)
    # copies are masked independently: the number of masked copies per token is
    # Binomial(k, p), not a fixed count per molecule
    counts = np.bincount(
        np.concatenate([cm.sum(1) for b in batches for cm in b.copy_masked]), minlength=k + 1)
    for j in range(k + 1):
        pmf = math.comb(k, j) * p**j * (1 - p) ** (k - j)
        sd = math.sqrt(pmf * (1 - pmf) / stats.n_tokens)
        assert abs(counts[j] / stats.n_tokens - pmf) < 4 * sd + 1e-12, j
    # ... and the masked count of a molecule varies as Binomial(n*k, p) does (a fixed
    # share per molecule, like mask_tokens, would give a variance near 0)
    z = [(cm.sum() - cm.size * p) / math.sqrt(cm.size * p * (1 - p))
         for b in batches for cm in b.copy_masked]
    assert 0.8 < np.var(z) < 1.2


def test_batch_guard_gives_exactly_one_target(corpus_ids):
    rng = np.random.default_rng(5)
    rb = repeated_mlm_collate(corpus_ids[:3], 2, 1e-12, rng, SPECIAL)
    assert sum(int(cm.sum()) for cm in rb.copy_masked) == 1
    assert int((rb.batch.labels != IGNORE_INDEX).sum()) == 1
    unguarded = repeated_mlm_collate(corpus_ids[:3], 2, 1e-12, rng, SPECIAL, ensure_one=False)
    assert sum(int(cm.sum()) for cm in unguarded.copy_masked) == 0


def test_both_objectives_train_on_repeated_batches(corpus_ids):
    rng = np.random.default_rng(2)
    mlm = repeated_mlm_collate(corpus_ids[:4], 2, 0.3, rng, SPECIAL, objective="mlm")
    exlm = repeated_mlm_collate(corpus_ids[:4], 2, 0.3, rng, SPECIAL, objective="exlm",
                                k_states=2)
    assert torch.isfinite(mlm_loss(_model("mlm"), mlm.batch).loss)
    out = exlm_loss(_model("exlm"), exlm.batch)
    assert torch.isfinite(out.loss) and out.n_invalid == 0
    masked = exlm.copy_masked[0].sum()
    assert int(exlm.batch.target_lengths[0]) == masked + 2


def test_fully_masked_entropy_mlm_equals_direct_computation(corpus_ids):
    model = _model("mlm")
    rng = np.random.default_rng(3)
    rb = repeated_mlm_collate(corpus_ids[:6], 2, 0.5, rng, SPECIAL)
    result = fully_masked_entropy(model, rb)
    b = rb.batch
    with torch.no_grad():
        hidden = model(b.input_ids, b.pos_original, b.pos_copy, b.padding_mask)
        prob = torch.softmax(model.lm_head(hidden).double(), -1).numpy()  # [B, N, V]
    entropy = -(prob * np.log2(np.where(prob > 0, prob, 1.0))).sum(-1)  # [B, N]
    expected, every = [], []
    for row, cm in enumerate(rb.copy_masked):
        for i in range(cm.shape[0]):
            copies = [entropy[row, 1 + 2 * i + j] for j in range(2) if cm[i, j]]
            every += copies
            if cm[i].all():
                expected.append(np.mean(copies))
    assert result.n_fully_masked == len(expected) == sum(int(cm.all(1).sum())
                                                          for cm in rb.copy_masked)
    np.testing.assert_allclose(result.token_entropy, expected, rtol=1e-5, atol=1e-6)
    assert result.mean == pytest.approx(np.mean(expected), rel=1e-5)
    assert result.all_copies_mean == pytest.approx(np.mean(every), rel=1e-5)
    assert result.n_tokens == sum(cm.shape[0] for cm in rb.copy_masked)
    assert np.std(expected) > 0.05


def test_fully_masked_entropy_exlm_counts_fully_masked_tokens(corpus_ids):
    rng = np.random.default_rng(4)
    rb = repeated_mlm_collate(corpus_ids[:2], 2, 0.5, rng, SPECIAL, objective="exlm")
    result = fully_masked_entropy(_model("exlm"), rb)
    assert isinstance(rb, RepeatedBatch)
    assert result.n_fully_masked == sum(int(cm.all(1).sum()) for cm in rb.copy_masked)
    assert np.isfinite(result.token_entropy).all() and (result.token_entropy >= 0).all()
