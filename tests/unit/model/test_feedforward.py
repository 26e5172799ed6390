"""Tests of exlm_chem.model.feedforward: GELU recomputed in backward, same numbers."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.feedforward import FeedForward, GeluLinear


def test_gelu_linear_gradcheck():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(5, 8, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(3, 8, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(GeluLinear.apply, (h, w, b))


def test_feedforward_matches_the_plain_composition_and_saves_less():
    torch.manual_seed(0)
    ffn = FeedForward(ExLMConfig.preset("tiny", 40)).train()
    x = torch.randn(7, 64, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = ffn(x)
    plain = ffn.fc2(F.gelu(ffn.fc1(x)))
    torch.testing.assert_close(out, plain, atol=1e-6, rtol=0)
    weights = torch.randn_like(out)
    grads = torch.autograd.grad((out * weights).sum(), [x, *ffn.parameters()])
    want = torch.autograd.grad((plain * weights).sum(), [x, *ffn.parameters()])
    for got, ref in zip(grads, want, strict=True):
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    # kept for backward: x (fc1's input), fc1's weight, the pre-activation, fc2's weight;
    # no [N, f] GELU output
    f = ffn.fc1.out_features
    assert sum(t.numel() for t in saved if t.shape == (7, f)) == 7 * f
