"""Tests of exlm_chem.model.token_layout and the encoder running on it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMEncoder
from exlm_chem.model.pooling import Pooling
from exlm_chem.model.token_layout import _groups, _padded_layout, token_layout

BOS = Pooling("bos")


def test_groups_exact():
    lengths = np.array([2, 2, 3, 10, 11, 30])
    # (0,1): 2*2 <= 1.15*4; adding 3 gives 9 > 8.05; 10 alone; 10+11: 22 <= 24.15; 30 alone
    assert _groups(lengths, 0.15) == [(0, 2), (2, 3), (3, 5), (5, 6)]
    assert _groups(lengths, 100.0) == [(0, 6)]
    assert _groups(np.array([], dtype=np.int64), 0.15) == []


def test_runs_of_one_length_are_groups_of_their_own():
    lengths = np.array([10] * 8 + [11])
    # by slack alone the 11 joins: 9 * 11 = 99 <= 1.15 * 91
    assert _groups(lengths, 0.15, equal_run=9) == [(0, 9)]
    assert _groups(lengths, 0.15, equal_run=8) == [(0, 8), (8, 9)]
    # a short run before a long one is grouped by slack, then the run stands alone
    assert _groups(np.array([3, 3] + [5] * 8 + [6, 7]), 0.15, equal_run=8) == \
        [(0, 2), (2, 10), (10, 12)]
    mask = torch.arange(12)[None, :] < torch.tensor([10] * 8 + [11])[:, None]  # [9, 12]
    layout = token_layout(mask, 9, 12)
    assert [(g.batch, g.width, g.gather is None) for g in layout.groups] == \
        [(8, 10, True), (1, 11, True)]


def test_layout_exact():
    mask = torch.tensor([[True, True, True, False],
                         [False, False, False, False],  # empty: takes no part
                         [True, False, True, False],  # real tokens need not be a prefix
                         [True, True, True, True]])
    layout = token_layout(mask, 4, 4, slack=0.0)
    # samples by length: 2 (2 tokens), 0 (3), 3 (4); flat tokens in that order
    assert layout.slots.tolist() == [8, 10, 0, 1, 2, 12, 13, 14, 15]
    assert [(g.start, g.stop, g.batch, g.width) for g in layout.groups] == \
        [(0, 2, 1, 2), (2, 5, 1, 3), (5, 9, 1, 4)]
    assert all(g.gather is None for g in layout.groups)  # one sample per group: no padding
    loose = token_layout(mask, 4, 4, slack=1.0)
    (g,) = loose.groups
    assert (g.start, g.stop, g.batch, g.width) == (0, 9, 3, 4)
    # padded slots repeat the sample's last real token; only real slots come back
    assert g.gather.tolist() == [0, 1, 1, 1, 2, 3, 4, 4, 5, 6, 7, 8]
    assert g.real.tolist() == [0, 1, 4, 5, 6, 8, 9, 10, 11]
    # first tokens: samples 2, 0, 3 start at flat 0, 2, 5; sample 2's slot 0 is real
    assert loose.firsts.tolist() == [0, 2, 5] and loose.first_owner.tolist() == [2, 0, 3]
    assert loose.first_at_zero.tolist() == [True, True, True]
    assert g.key_mask[:, 0, 0].tolist() == [[True, True, False, False],
                                            [True, True, True, False], [True] * 4]
    flat = torch.arange(9.0)[:, None]
    assert loose.unflatten(flat)[..., 0].tolist() == [[2, 3, 4, 0], [0, 0, 0, 0],
                                                     [0, 0, 1, 0], [5, 6, 7, 8]]
    full = token_layout(torch.ones(2, 3, dtype=torch.bool), 2, 3)
    assert full.slots is None and full.groups[0].gather is None
    assert full.groups[0].key_mask is None and full.first_at_zero is None
    assert full.firsts.tolist() == [0, 3] and full.first_owner.tolist() == [0, 1]
    none = token_layout(None, 2, 3)
    assert none.groups == full.groups and torch.equal(none.firsts, full.firsts)


def random_batch(n: int, seed: int, vocab: int = 400):
    """``n`` samples of random lengths 1..30 (one empty), padded to 32 slots."""
    g = torch.Generator().manual_seed(seed)
    X = 32
    lengths = torch.randint(1, 31, (n,), generator=g)
    lengths[3] = 0
    mask = torch.arange(X)[None, :] < lengths[:, None]
    mask[5] = mask[5].roll(2)  # a sample whose real tokens do not start at slot 0
    ids = torch.randint(5, vocab, (n, X), generator=g).masked_fill(~mask, 1)
    po = torch.randint(0, 40, (n, X), generator=g)
    pc = torch.randint(0, 3, (n, X), generator=g)
    return ids, po, pc, mask


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(0)
    config = ExLMConfig.preset("tiny", 400)
    return ExLMEncoder(dataclasses.replace(config, dropout=0.0, attention_dropout=0.0))


def test_grouped_encoder_equals_each_sample_alone(encoder):
    ids, po, pc, mask = random_batch(24, seed=1)
    with torch.no_grad():
        batched = encoder.eval()(ids, po, pc, mask)
        assert torch.equal(batched[~mask], torch.zeros_like(batched[~mask]))
        for b in range(len(ids)):
            keep = mask[b]
            if not keep.any():
                continue
            alone = encoder(ids[b, keep][None], po[b, keep][None], pc[b, keep][None])[0]
            torch.testing.assert_close(batched[b, keep], alone, atol=1e-5, rtol=0)


def test_grouped_encoder_gradients_equal_per_sample_gradients(encoder):
    ids, po, pc, mask = random_batch(10, seed=2)
    weights = torch.randn(*ids.shape, encoder.config.d_model,
                          generator=torch.Generator().manual_seed(3))
    encoder.train().zero_grad()
    (encoder(ids, po, pc, mask) * weights).sum().backward()
    batched = {n: p.grad.clone() for n, p in encoder.named_parameters()}
    encoder.zero_grad()
    for b in range(len(ids)):
        keep = mask[b]
        if keep.any():
            out = encoder(ids[b, keep][None], po[b, keep][None], pc[b, keep][None])
            (out[0] * weights[b, keep]).sum().backward()
    for name, param in encoder.named_parameters():
        torch.testing.assert_close(batched[name], param.grad, atol=1e-5, rtol=1e-4,
                                   msg=name)
    encoder.eval()


def test_batches_without_padding_reach_sdpa_without_a_mask(encoder, monkeypatch):
    import torch.nn.functional as F

    seen = []
    sdpa = F.scaled_dot_product_attention

    def recording(*args, attn_mask=None, **kwargs):
        seen.append(attn_mask)
        return sdpa(*args, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr("exlm_chem.model.attention.F.scaled_dot_product_attention", recording)
    ids, po, pc, _ = random_batch(8, seed=4)
    with torch.no_grad():
        encoder.eval()(ids, po, pc, torch.ones_like(ids, dtype=torch.bool))
        assert len(seen) == encoder.config.n_layers and all(m is None for m in seen)
        seen.clear()
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[0, -5:] = False  # one shorter sample: only its group needs a mask
        encoder(ids, po, pc, mask)
    assert any(m is not None for m in seen)


@pytest.mark.parametrize("padded", [True, False])
def test_bos_pooling_equals_position_zero_of_the_full_output(encoder, padded):
    ids, po, pc, mask = random_batch(12, seed=5)
    if not padded:
        mask = torch.ones_like(mask)
    with torch.no_grad():
        full = encoder.eval()(ids, po, pc, mask)  # [B, X, d]
        first = encoder(ids, po, pc, mask, pooling=BOS)  # [B, d]
    assert first.shape == (len(ids), encoder.config.d_model)
    torch.testing.assert_close(first, full[:, 0], atol=1e-5, rtol=0)
    if padded:  # the empty sample and the one whose slot 0 is padding: zeros, as in full
        assert torch.equal(first[3], torch.zeros_like(first[3]))
        assert torch.equal(first[5], torch.zeros_like(first[5]))


def test_bos_pooling_gradients_equal_the_full_forward(encoder):
    ids, po, pc, mask = random_batch(10, seed=6)
    weights = torch.randn(len(ids), encoder.config.d_model,
                          generator=torch.Generator().manual_seed(7))
    grads = []
    for pooling in (None, BOS):
        encoder.train().zero_grad()
        out = encoder(ids, po, pc, mask, pooling=pooling)
        ((out if pooling else out[:, 0]) * weights).sum().backward()
        grads.append({n: p.grad.clone() for n, p in encoder.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], atol=1e-5, rtol=1e-4,
                                   msg=name)
    encoder.eval()


def test_recomputed_attention_dropout_gives_the_same_gradients(monkeypatch):
    """CPU training recomputes attention in backward: same dropout draw, same gradients."""
    torch.manual_seed(0)
    config = dataclasses.replace(ExLMConfig.preset("tiny", 400), dropout=0.0,
                                 attention_dropout=0.3)
    encoder = ExLMEncoder(config).train()
    ids, po, pc, mask = random_batch(10, seed=8)
    weights = torch.randn(*ids.shape, config.d_model, generator=torch.Generator().manual_seed(9))

    def grads(seed=1):
        encoder.zero_grad()
        torch.manual_seed(seed)  # the dropout draw
        (encoder(ids, po, pc, mask) * weights).sum().backward()
        return {n: p.grad.clone() for n, p in encoder.named_parameters()}

    recomputed = grads()
    monkeypatch.setattr("exlm_chem.model.attention.checkpoint",
                        lambda fn, *args, use_reentrant, **kwargs: fn(*args, **kwargs))
    kept = grads()
    for name, grad in kept.items():
        torch.testing.assert_close(recomputed[name], grad, atol=1e-6, rtol=1e-5, msg=name)
    other = grads(seed=2)  # another draw changes them: dropout is really on
    assert not torch.allclose(other["blocks.0.attn.qkv.weight"], kept["blocks.0.attn.qkv.weight"])


def test_layout_off_the_cpu_never_reads_the_mask():
    """A meta tensor has no data: any read (``.cpu()``, ``bool()``, ``.numpy()``) raises."""
    mask = torch.tensor([[True, True, False], [True, False, False]]).to("meta")
    layout = token_layout(mask, 2, 3)
    (g,) = layout.groups
    assert layout.slots is None and g.gather is None and g.real is None
    assert (g.start, g.stop, g.batch, g.width) == (0, 6, 2, 3)
    assert g.key_mask.shape == (2, 1, 1, 3) and g.key_mask.device.type == "meta"
    assert layout.first_at_zero is None


def test_padded_layout_gives_the_flat_layout_outputs(encoder, monkeypatch):
    ids, po, pc, mask = random_batch(12, seed=10)
    with torch.no_grad():
        flat = encoder.eval()(ids, po, pc, mask)
        flat_first = encoder(ids, po, pc, mask, pooling=BOS)
        monkeypatch.setattr("exlm_chem.model.encoder.token_layout",
                            lambda m, B, X: _padded_layout(m, B, X))
        padded = encoder(ids, po, pc, mask)
        padded_first = encoder(ids, po, pc, mask, pooling=BOS)
    torch.testing.assert_close(padded[mask], flat[mask], atol=1e-5, rtol=0)
    assert torch.isfinite(padded).all()
    starts = mask[:, 0]  # samples whose slot 0 is a real token
    torch.testing.assert_close(padded_first[starts], flat_first[starts], atol=1e-5, rtol=0)
