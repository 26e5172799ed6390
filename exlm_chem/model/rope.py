"""2D rotary position embedding (RoPE) that tells expanded [MASK] copies apart.

Every expanded token carries two coordinates: its index in the original sequence
(``pos_original``, shared by the k copies of one token) and its copy index (``pos_copy``,
1..k for the copies of BOS/[MASK]/EOS, 0 for ordinary tokens). A head of width ``hd``
is split in two halves: the first half is rotated by ``pos_original``, the second by
``pos_copy``. Inside a half of width ``h`` the rotation is the NeoX "rotate half" kind:
dim ``j`` is paired with dim ``j + h/2`` and the pair is turned by
``pos * base**(-j / (h/2))``. The dot product of a rotated query and key then depends only
on the differences of the two coordinates.

Shapes: B batch, H heads, X expanded tokens, hd head dim.
"""

from __future__ import annotations

import torch


def rope_inv_freq(head_dim: int, base: float, device: torch.device | None = None) -> torch.Tensor:
    """Frequencies of one half: ``base**(-j / (half/2))`` for ``j = 0..half/2-1``, float32."""
    if head_dim % 4:
        raise ValueError(f"head_dim={head_dim} must be divisible by 4 for 2D RoPE")
    quarter = head_dim // 4  # pairs per half
    j = torch.arange(quarter, dtype=torch.float32, device=device)
    return base ** (-j / quarter)


def rope_cos_sin(
    pos_original: torch.Tensor, pos_copy: torch.Tensor, head_dim: int, base: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosines and sines of the 2D rotation, computed once per forward pass.

    Parameters
    ----------
    pos_original, pos_copy : LongTensor [B, X]
        Original-sequence index and copy index of every expanded token.
    head_dim : int
        Width of one attention head (divisible by 4).
    base : float
        RoPE frequency base, the same for both coordinates.

    Returns
    -------
    cos, sin : float32 Tensor [B, 1, X, head_dim]
        Laid out to match ``[first half | second half]``, each half ``[f | f]`` so that
        :func:`apply_rope` is two multiply-adds; the singleton broadcasts over heads.
    """
    if pos_original.shape != pos_copy.shape or pos_original.dim() != 2:
        raise ValueError("pos_original and pos_copy must both be [B, X]; got "
                         f"{tuple(pos_original.shape)} and {tuple(pos_copy.shape)}")
    inv_freq = rope_inv_freq(head_dim, base, pos_original.device)  # [hd/4]
    ang1 = pos_original.float()[..., None] * inv_freq  # [B, X, hd/4]
    ang2 = pos_copy.float()[..., None] * inv_freq  # [B, X, hd/4]
    angles = torch.cat([ang1, ang1, ang2, ang2], dim=-1)  # [B, X, hd]
    return angles.cos()[:, None], angles.sin()[:, None]  # [B, 1, X, hd] each


def _rotate_halves(x: torch.Tensor) -> torch.Tensor:
    """Per half ``[a | b] -> [-b | a]``; the partner of each dim, signed for the rotation."""
    q = x.shape[-1] // 4
    a1, b1, a2, b2 = x.split(q, dim=-1)  # four [..., hd/4] quarters
    return torch.cat([-b1, a1, -b2, a2], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [B, H, X, hd] by precomputed ``cos``/``sin`` [B, 1, X, hd].

    The rotation runs in float32 (float64 inputs stay float64) and the result is cast
    back to ``x.dtype``, so bf16/fp16 activations do not lose the angle precision.
    """
    work = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(work)
    out = xf * cos.to(work) + _rotate_halves(xf) * sin.to(work)
    return out.to(x.dtype)


def apply_2d_rope(
    q_or_k: torch.Tensor, pos_original: torch.Tensor, pos_copy: torch.Tensor, base: float
) -> torch.Tensor:
    """Apply 2D RoPE to queries or keys.

    Parameters
    ----------
    q_or_k : Tensor [B, H, X, hd]
        Per-head queries or keys; ``hd`` divisible by 4.
    pos_original, pos_copy : LongTensor [B, X]
        Original-sequence index and copy index of every expanded token.
    base : float
        RoPE frequency base.

    Returns
    -------
    Tensor [B, H, X, hd]
        Same shape and dtype as ``q_or_k``.
    """
    if q_or_k.dim() != 4 or q_or_k.shape[0] != pos_original.shape[0] \
            or q_or_k.shape[2] != pos_original.shape[-1]:
        raise ValueError(f"q_or_k must be [B, H, X, hd] matching positions [B, X]; got "
                         f"{tuple(q_or_k.shape)} and {tuple(pos_original.shape)}")
    cos, sin = rope_cos_sin(pos_original, pos_copy, q_or_k.shape[-1], base)
    return apply_rope(q_or_k, cos, sin)
