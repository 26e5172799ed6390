"""Self-attention of the ExLM encoder over a padding-free token layout, with 2D RoPE.

Tokens arrive flat, ``[N, d]`` (see :mod:`exlm_chem.model.token_layout`); attention runs
group by group on ``[Bg, H, Xg, hd]`` views or gathers. With ``queries`` only those rows
get an output: the last block does this when only the first BOS state is pooled, so its
other N - B query projections, attention rows, output projections and FFN rows are never
computed.

Shapes: N flat tokens, S query rows, Bg/Xg samples/width of a group, d model dim,
H heads, hd head dim.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.rope import rotate_pairs
from exlm_chem.model.token_layout import AttentionGroup, TokenLayout


def _per_group(t: torch.Tensor, g: AttentionGroup) -> torch.Tensor:
    """Flat ``[N, H, hd]`` -> the group's ``[Bg, H, Xg, hd]``."""
    rows = t[g.start : g.stop] if g.gather is None else t.index_select(0, g.gather)
    return rows.view(g.batch, g.width, *t.shape[1:]).transpose(1, 2)


class SelfAttention(nn.Module):
    """Bidirectional multi-head self-attention with 2D RoPE on queries and keys."""

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        self.attention_dropout = config.attention_dropout
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)  # fused q, k, v projections
        self.out = nn.Linear(config.d_model, config.d_model)

    def forward(self, x: torch.Tensor, rotation: torch.Tensor, layout: TokenLayout,
                queries: torch.Tensor | None = None) -> torch.Tensor:
        """Attention output ``[N, d]``, or ``[S, d]`` for the flat rows ``queries`` [S].

        ``x`` [N, d] holds the real tokens in ``layout``'s flat order, ``rotation``
        [N, 1, 1, hd/2] their RoPE. ``queries`` must hold one row per non-empty sample in
        group order (:attr:`TokenLayout.firsts`).
        """
        N, d = x.shape
        H, hd = self.n_heads, self.head_dim
        if queries is None:
            qkv = self.qkv(x).view(N, 3, H, hd)  # [N, 3, H, hd]
            # q and k rotated together in the fused layout: one complex multiply
            qk = rotate_pairs(qkv[:, :2], rotation)  # [N, 2, H, hd]
            q, k, v = qk[:, 0], qk[:, 1], qkv[:, 2]
        else:  # keys and values for every token, queries for the chosen rows only
            w, b = self.qkv.weight, self.qkv.bias
            kv = F.linear(x, w[d:], b[d:]).view(N, 2, H, hd)  # [N, 2, H, hd]
            k, v = rotate_pairs(kv[:, 0], rotation[:, 0]), kv[:, 1]
            q = F.linear(x[queries], w[:d], b[:d]).view(-1, H, hd)  # [S, H, hd]
            q = rotate_pairs(q, rotation[queries, 0])
        dropout = self.attention_dropout if self.training else 0.0
        # CPU SDPA has no fused kernel with dropout: its math path would keep the [Xg, Xg]
        # probabilities and dropout mask of every group for backward (the largest saved
        # tensors of a fine-tuning step); recompute them instead, with the same dropout draw
        recompute = dropout > 0 and x.device.type == "cpu" and torch.is_grad_enabled()
        outputs, first = [], 0
        for g in layout.groups:
            if queries is None:
                q_g = _per_group(q, g)  # [Bg, H, Xg, hd]
            else:
                q_g = q[first : first + g.batch].unsqueeze(2)  # [Bg, H, 1, hd]
                first += g.batch
            # SDPA scales q.k by hd**-0.5 itself; key_mask is [Bg, 1, 1, Xg], True = attend
            args = (q_g, _per_group(k, g), _per_group(v, g))
            if recompute:
                y = checkpoint(F.scaled_dot_product_attention, *args, attn_mask=g.key_mask,
                               dropout_p=dropout, use_reentrant=False)
            else:
                y = F.scaled_dot_product_attention(*args, attn_mask=g.key_mask,
                                                   dropout_p=dropout)
            y = y.transpose(1, 2).reshape(-1, d)  # [Bg*Xg or Bg, d]
            outputs.append(y if g.real is None or queries is not None
                           else y.index_select(0, g.real))
        y = outputs[0] if len(outputs) == 1 else torch.cat(outputs)  # [N or S, d]
        return self.out(y)
