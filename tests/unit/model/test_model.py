"""Tests of exlm_chem.model: config presets, 2D RoPE, encoder and heads."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMEncoder, ExLMModel
from exlm_chem.model.heads import PredictionHead, TransitionHead
from exlm_chem.model.rope import rope_inv_freq, rope_rotation, rotate_pairs
from exlm_chem.presets import MODEL_SIZES

V = 400  # a vocabulary size in the range of the real SMILES tokenizer
PAD, BOS, EOS, MASK = 1, 0, 2, 4


def tiny(**overrides) -> ExLMConfig:
    return ExLMConfig.preset("tiny", V, **overrides)


# ---- config ---------------------------------------------------------------------------------
def test_config_import_does_not_pull_torch():
    code = "import sys, exlm_chem.model.config as c; c.ExLMConfig; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_presets_architecture():
    assert set(MODEL_SIZES) == {"base", "small", "tiny"}
    base = ExLMConfig.preset("base", 369)
    assert (base.n_layers, base.d_model, base.n_heads, base.d_ffn, base.k_states) == \
        (9, 768, 12, 2048, 2)
    assert base.head_dim == 64
    small = ExLMConfig.preset("small", 600)
    assert small.n_layers == 9 and small.d_ffn == 4 * small.d_model and small.k_states == 2
    assert (small.dropout, small.attention_dropout) == (0.1, 0.1)


@pytest.mark.parametrize(("name", "vocab", "low", "high"), [
    ("tiny", 600, 0, 200_000),
    ("small", 600, 7_000_000, 10_000_000),
    ("base", 369, 45_000_000, 55_000_000),
])
def test_preset_parameter_counts(name, vocab, low, high):
    with torch.device("meta"):  # count without allocating
        model = ExLMModel(ExLMConfig.preset(name, vocab))
    n = model.num_parameters()
    assert low <= n < high, n
    if name == "small":  # shipped default: <= 20 MB in 16-bit, heads and embeddings included
        assert 2 * n <= 20_000_000


def test_exact_parameter_count_tiny():
    # hand count for vocab 400, d 64, FFN 128, 2 layers, 2 heads, 512 transition positions
    d, f, v, H, P = 64, 128, 400, 2, 512
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    encoder = v * d + 2 * block + 2 * d
    lm_head = (d * d + d) + 2 * d + v  # tied projection adds only its bias
    transition = P * d + 2 * (2 * d * d + d) + (2 * d * H + H)
    assert ExLMModel(tiny()).num_parameters() == encoder + lm_head + transition
    assert ExLMModel(tiny(objective="mlm")).num_parameters() == encoder + lm_head


@pytest.mark.parametrize(("overrides", "message"), [
    ({"d_model": 66, "n_heads": 4}, "not divisible by n_heads"),
    ({"d_model": 60, "n_heads": 6}, "divisible by 4"),
    ({"k_states": 0}, "k_states"),
    ({"objective": "bert"}, "objective"),
    ({"dropout": 1.5}, "dropout"),
    ({"mask_id": 400}, "mask_id"),
    ({"smiles_decoder": 1}, "smiles_decoder must be true or false"),
])
def test_config_validation(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny(**overrides)


def test_config_json_round_trip(tmp_path):
    cfg = tiny(k_states=3, objective="mlm", rope_base=500.0)
    cfg.to_json(tmp_path / "c.json")
    assert ExLMConfig.from_json(tmp_path / "c.json") == cfg
    assert ExLMConfig.from_dict(cfg.to_dict()) == cfg
    data = {**cfg.to_dict(), "n_layer": 3, "zzz": 1}
    with pytest.raises(ValueError, match="n_layer, zzz"):
        ExLMConfig.from_dict(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"bad\.json.*n_layer"):
        ExLMConfig.from_json(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no model preset 'huge'"):
        ExLMConfig.preset("huge", V)


# ---- 2D RoPE --------------------------------------------------------------------------------
def slow_2d_rope(x, pos_original, pos_copy, base):
    """Explicit pair-by-pair rotation, float64, straight from the definition: pair ``j``
    of the first half (dims ``2j, 2j+1``) turns by pos_original, of the second half by
    pos_copy."""
    B, H, X, hd = x.shape
    half, quarter = hd // 2, hd // 4
    out = x.double().clone()
    for b in range(B):
        for t in range(X):
            for part, pos in ((0, int(pos_original[b, t])), (1, int(pos_copy[b, t]))):
                for j in range(quarter):
                    theta = pos * base ** (-j / quarter)
                    c, s = math.cos(theta), math.sin(theta)
                    lo, hi = part * half + 2 * j, part * half + 2 * j + 1
                    for h in range(H):
                        a, e = float(x[b, h, t, lo]), float(x[b, h, t, hi])
                        out[b, h, t, lo] = a * c - e * s
                        out[b, h, t, hi] = a * s + e * c
    return out


def test_inv_freq_matches_paper_layout():
    f = rope_inv_freq(64, 10000.0)
    assert f.shape == (16,)  # two 32-dim halves, 16 frequencies each
    torch.testing.assert_close(f[1], torch.tensor(10000.0 ** (-1 / 16)))
    assert f[0] == 1.0


def rope_2d(x: torch.Tensor, pos_original: torch.Tensor, pos_copy: torch.Tensor,
            base: float) -> torch.Tensor:
    """2D RoPE on queries or keys [B, H, X, hd] as the encoder applies it: one rotation per
    token (``rope_rotation``), the same for every head (``rotate_pairs``)."""
    return rotate_pairs(x, rope_rotation(pos_original, pos_copy, x.shape[-1], base)[:, None])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_rope_matches_explicit_rotation(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=g, dtype=dtype)
    pos_original = torch.tensor([[0, 0, 1, 2, 2, 3, 4], [0, 1, 1, 1, 2, 40, 41]])
    pos_copy = torch.tensor([[1, 2, 0, 1, 2, 0, 0], [0, 1, 2, 3, 0, 1, 2]])
    got = rope_2d(x, pos_original, pos_copy, 100.0)
    assert got.dtype == dtype and got.shape == x.shape
    want = slow_2d_rope(x, pos_original, pos_copy, 100.0)
    # the angles are computed in float32, so even float64 inputs agree to ~1e-6
    torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=0)


def test_rope_second_half_follows_copy_index_only():
    x = torch.randn(1, 1, 2, 8)
    x[0, 0, 1] = x[0, 0, 0]  # the same vector at two tokens
    out = rope_2d(x, torch.tensor([[5, 9]]), torch.tensor([[2, 2]]), 10000.0)
    assert not torch.allclose(out[..., 0, :4], out[..., 1, :4])
    torch.testing.assert_close(out[..., 0, 4:], out[..., 1, 4:])


def test_rope_relative_positions():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 32, generator=g, dtype=torch.float64)

    def score(p1, c1, p2, c2):
        both = torch.stack([q, k])[None, :, None]  # [1, 2, 1, hd]: q and k as two "heads"
        pos_o = torch.tensor([[p1]]), torch.tensor([[p2]])
        pos_c = torch.tensor([[c1]]), torch.tensor([[c2]])
        rq = rope_2d(both[:, :1], pos_o[0], pos_c[0], 10000.0)
        rk = rope_2d(both[:, 1:], pos_o[1], pos_c[1], 10000.0)
        return float((rq * rk).sum())

    ref = score(3, 1, 7, 2)
    assert score(13, 1, 17, 2) == pytest.approx(ref, abs=1e-5)  # shift pos_original
    assert score(3, 0, 7, 1) == pytest.approx(ref, abs=1e-5)  # shift pos_copy
    assert score(103, 4, 107, 5) == pytest.approx(ref, abs=1e-5)  # shift both
    assert score(3, 1, 8, 2) != pytest.approx(ref, abs=1e-3)  # differences matter
    assert score(3, 1, 7, 3) != pytest.approx(ref, abs=1e-3)


def test_rope_keeps_low_precision_dtype():
    x = torch.randn(1, 2, 5, 8, dtype=torch.bfloat16)
    pos = torch.arange(5)[None]
    out = rope_2d(x, pos, torch.zeros_like(pos), 10000.0)
    assert out.dtype == torch.bfloat16
    ref = rope_2d(x.float(), pos, torch.zeros_like(pos), 10000.0)
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


# ---- encoder --------------------------------------------------------------------------------
def expand(tokens: list[int], k: int):
    """Expand BOS/[MASK]/EOS k times with 2D positions (the collate step's job)."""
    ids, pos_o, pos_c = [], [], []
    for i, t in enumerate(tokens):
        copies = k if t in (BOS, MASK, EOS) else 1
        for c in range(copies):
            ids.append(t)
            pos_o.append(i)
            pos_c.append(c + 1 if copies > 1 or t in (BOS, MASK, EOS) else 0)
    return ids, pos_o, pos_c


def test_expand_helper_matches_worked_example():
    a, b, c = 10, 11, 12
    ids, po, pc = expand([BOS, a, MASK, b, MASK, MASK, c, EOS], 3)
    assert ids == [BOS] * 3 + [a] + [MASK] * 3 + [b] + [MASK] * 6 + [c] + [EOS] * 3
    assert po == [0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 5, 5, 5, 6, 7, 7, 7]
    assert pc == [1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3, 0, 1, 2, 3]


def pad_batch(samples):
    X = max(len(s[0]) for s in samples)
    ids = torch.full((len(samples), X), PAD)
    po = torch.zeros(len(samples), X, dtype=torch.long)
    pc = torch.zeros(len(samples), X, dtype=torch.long)
    mask = torch.zeros(len(samples), X, dtype=torch.bool)
    for b, (i, o, c) in enumerate(samples):
        n = len(i)
        ids[b, :n], po[b, :n], pc[b, :n], mask[b, :n] = (
            torch.tensor(i), torch.tensor(o), torch.tensor(c), True)
    return ids, po, pc, mask


SAMPLES = [
    [BOS, 10, MASK, 11, 12, EOS],
    [BOS, 13, 14, MASK, MASK, 15, 16, 17, 18, EOS],
    [BOS, MASK, EOS],
]


def test_encoder_padding_invariance():
    torch.manual_seed(0)
    model = ExLMEncoder(tiny()).eval()
    samples = [expand(s, 2) for s in SAMPLES]
    ids, po, pc, mask = pad_batch(samples)
    with torch.no_grad():
        batched = model(ids, po, pc, mask)
        assert torch.isfinite(batched).all()
        for b, (i, o, c) in enumerate(samples):
            alone = model(torch.tensor([i]), torch.tensor([o]), torch.tensor([c]))
            torch.testing.assert_close(batched[b, : len(i)], alone[0], atol=1e-5, rtol=0)


def test_encoder_fully_padded_sample_is_finite():
    model = ExLMEncoder(tiny()).eval()
    ids, po, pc, mask = pad_batch([expand(SAMPLES[0], 2), expand(SAMPLES[2], 2)])
    mask[1] = False
    ids[1] = PAD
    with torch.no_grad():
        out = model(ids, po, pc, mask)
    assert torch.isfinite(out).all()


def test_copies_differ_only_through_copy_index():
    model = ExLMEncoder(tiny()).eval()
    ids, po, pc = expand([BOS, 10, MASK, 11, EOS], 2)
    ids, po, pc = torch.tensor([ids]), torch.tensor([po]), torch.tensor([pc])
    with torch.no_grad():
        out = model(ids, po, pc)
        flat = model(ids, po, torch.zeros_like(pc))
    mask_copies = (ids[0] == MASK).nonzero().flatten()
    assert not torch.allclose(out[0, mask_copies[0]], out[0, mask_copies[1]], atol=1e-4)
    # without the copy index nothing tells the copies apart: no absolute positions
    torch.testing.assert_close(flat[0, mask_copies[0]], flat[0, mask_copies[1]])


def test_encoder_init():
    cfg = tiny()
    model = ExLMModel(cfg)
    emb = model.encoder.embed_tokens.weight
    assert torch.count_nonzero(emb[cfg.pad_id]) == 0
    assert 0.015 < emb.std().item() < 0.025
    fc1 = model.encoder.blocks[0].ffn.fc1
    assert 0.015 < fc1.weight.std().item() < 0.025 and torch.count_nonzero(fc1.bias) == 0
    assert model.lm_head.weight is model.encoder.embed_tokens.weight
    names = {n for n, _ in model.named_parameters()}
    assert not any("pos" in n for n in names if n.startswith("encoder."))


def test_encoder_rejects_bad_shapes():
    model = ExLMEncoder(tiny())
    ids = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="positions must match"):
        model(ids, torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long))


# ---- transition head --------------------------------------------------------------------------
def transition_inputs(seed=0, garbage=10**6):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(3, 10, 64, generator=g, requires_grad=True)
    state_index = torch.tensor([[0, 1, 3, 4, 8, 9],
                                [0, 2, 5, garbage, garbage, garbage],
                                [4, garbage, -7, garbage, 0, garbage]])
    lengths = torch.tensor([6, 3, 1])
    return hidden, state_index, lengths


def test_transition_mask_and_normalisation():
    torch.manual_seed(0)
    head = TransitionHead(tiny())
    hidden, state_index, lengths = transition_inputs()
    log_e = head(hidden, state_index, lengths)
    assert log_e.dtype == torch.float32 and log_e.shape == (3, 6, 6)
    i = torch.arange(6)[:, None]
    j = torch.arange(6)[None, :]
    for b, L in enumerate(lengths.tolist()):
        allowed = (j > i) & (j < L)
        assert torch.isfinite(log_e[b][allowed]).all()
        assert torch.isneginf(log_e[b][~allowed]).all()
        rows = torch.logsumexp(log_e[b], dim=-1)
        torch.testing.assert_close(rows[: L - 1], torch.zeros(L - 1), atol=1e-5, rtol=0)
        assert torch.isneginf(rows[L - 1:]).all()
    # padding entries of state_index are ignored, whatever they hold
    hidden2, state_index2, _ = transition_inputs(garbage=5)
    torch.testing.assert_close(head(hidden2, state_index2, lengths), log_e, atol=0, rtol=0)


def test_transition_matches_probability_space_formula():
    torch.manual_seed(0)
    head = TransitionHead(tiny())
    hidden, state_index, lengths = transition_inputs()
    log_e = head(hidden, state_index, lengths)
    b, i, L, H, hd = 0, 1, 6, 2, 32
    idx = state_index[b, :L]
    feats = torch.cat([hidden[b, idx], head.pos_embed.weight[idx]], dim=-1)  # [L, 2d]
    q = head.query(feats).view(L, H, hd)
    k = head.key(feats).view(L, H, hd)
    gate = torch.softmax(head.gate(feats[i]), dim=-1)  # [H]
    succ = torch.arange(i + 1, L)
    probs = sum(gate[h] * torch.softmax(k[succ, h] @ q[i, h] / math.sqrt(hd), dim=0)
                for h in range(H))
    torch.testing.assert_close(log_e[b, i, succ], probs.log(), atol=1e-5, rtol=1e-5)


def test_transition_backward_is_finite():
    torch.manual_seed(0)
    head = TransitionHead(tiny())
    hidden, state_index, lengths = transition_inputs()
    log_e = head(hidden, state_index, lengths)
    weights = torch.randn_like(log_e)
    loss = (log_e.masked_fill(~torch.isfinite(log_e), 0.0) * weights).sum()
    loss.backward()
    assert torch.isfinite(hidden.grad).all() and hidden.grad.abs().sum() > 0
    for name, p in head.named_parameters():
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_transition_runs_in_float32_under_autocast():
    torch.manual_seed(0)
    head = TransitionHead(tiny())
    hidden, state_index, lengths = transition_inputs()
    ref = head(hidden, state_index, lengths)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = head(hidden.bfloat16(), state_index, lengths)
    assert got.dtype == torch.float32
    finite = torch.isfinite(ref)
    assert torch.equal(finite, torch.isfinite(got))
    torch.testing.assert_close(got[finite], ref[finite], atol=0.05, rtol=0.05)


def test_transition_rejects_too_long_sequence():
    head = TransitionHead(tiny(max_expanded_positions=8))
    hidden, state_index, lengths = transition_inputs()
    with pytest.raises(ValueError, match="max_expanded_positions"):
        head(hidden, state_index, lengths)


# ---- whole model ------------------------------------------------------------------------------
def test_gradient_reaches_every_parameter():
    torch.manual_seed(0)
    model = ExLMModel(tiny()).train()
    samples = [expand(s, 2) for s in SAMPLES]
    ids, po, pc, mask = pad_batch(samples)
    hidden = model(ids, po, pc, mask)
    logits = model.lm_head(hidden[mask])  # [real tokens, V]
    assert logits.shape == (int(mask.sum()), V)
    # states = expanded BOS/[MASK]/EOS positions of each sample, compacted
    is_state = (ids == BOS) | (ids == MASK) | (ids == EOS)
    lengths = is_state.sum(1)
    state_index = torch.zeros(3, int(lengths.max()), dtype=torch.long)
    for b in range(3):
        pos = is_state[b].nonzero().flatten()
        state_index[b, : len(pos)] = pos
    log_e = model.transition_head(hidden, state_index, lengths)
    loss = torch.log_softmax(logits, -1)[:, 5].sum() + log_e[torch.isfinite(log_e)].sum()
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_mlm_objective_has_no_transition_head():
    model = ExLMModel(tiny(objective="mlm"))
    assert model.transition_head is None


def test_lm_head_uses_tied_embedding():
    model = ExLMModel(tiny()).eval()
    h = torch.randn(4, 64)
    x = model.lm_head.ln(torch.nn.functional.gelu(model.lm_head.dense(h)))
    with torch.no_grad():
        model.lm_head.bias.fill_(0.5)
        want = x @ model.encoder.embed_tokens.weight.T + 0.5
        torch.testing.assert_close(model.lm_head(h), want)


def test_classification_head():
    torch.manual_seed(0)
    head = PredictionHead(64, 12, dropout=0.1).eval()
    x = torch.randn(5, 64)
    out = head(x)
    assert out.shape == (5, 12)
    torch.testing.assert_close(out, head.out(torch.tanh(head.dense(x))))
    assert torch.count_nonzero(head.out.bias) == 0
