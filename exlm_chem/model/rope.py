"""2D rotary position embedding (RoPE) that tells expanded [MASK] copies apart.

Every expanded token carries two coordinates: its index in the original sequence
(``pos_original``, shared by the k copies of one token) and its copy index (``pos_copy``,
1..k for the copies of BOS/[MASK]/EOS, 0 for ordinary tokens). A head of width ``hd``
holds ``hd/2`` interleaved pairs ``(2p, 2p+1)``. The first ``hd/4`` pairs are turned by
``pos_original``, the last ``hd/4`` by ``pos_copy``; pair ``j`` of either group is turned
by the angle ``pos * base**(-j / (hd/4))``. The dot product of a rotated query and key
then depends only on the differences of the two coordinates.

A pair is rotated as one complex multiply on a view of the activations: no split, negate
or concatenate copies (on CPU these made RoPE cost more than the q/k/v projection).
Checkpoints of format versions 1 and 2 paired dims ``j`` and ``j + hd/4`` inside each half
(the NeoX "rotate half" layout); :mod:`exlm_chem.model.rope_layout` converts them on load.

Shapes: B batch, H heads, X expanded tokens, hd head dim.
"""

from __future__ import annotations

import torch


def rope_inv_freq(head_dim: int, base: float, device: torch.device | None = None) -> torch.Tensor:
    """Frequencies of one coordinate: ``base**(-j / (hd/4))`` for ``j = 0..hd/4-1``, float32."""
    if head_dim % 4:
        raise ValueError(f"head_dim={head_dim} must be divisible by 4 for 2D RoPE")
    quarter = head_dim // 4  # pairs per coordinate
    j = torch.arange(quarter, dtype=torch.float32, device=device)
    return base ** (-j / quarter)


def rope_rotation(
    pos_original: torch.Tensor, pos_copy: torch.Tensor, head_dim: int, base: float
) -> torch.Tensor:
    """Unit complex numbers of the 2D rotation, computed once per forward pass.

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
    complex64 Tensor [B, X, head_dim/2]
        ``exp(i * angle)`` per pair: ``hd/4`` pairs for ``pos_original``, then ``hd/4``
        for ``pos_copy``.
    """
    if pos_original.shape != pos_copy.shape or pos_original.dim() != 2:
        raise ValueError("pos_original and pos_copy must both be [B, X]; got "
                         f"{tuple(pos_original.shape)} and {tuple(pos_copy.shape)}")
    inv_freq = rope_inv_freq(head_dim, base, pos_original.device)  # [hd/4]
    angles = torch.cat([pos_original.float()[..., None] * inv_freq,
                        pos_copy.float()[..., None] * inv_freq], dim=-1)  # [B, X, hd/2]
    return torch.polar(torch.ones_like(angles), angles)


def rotate_pairs(x: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
    """Turn each interleaved pair of ``x`` [..., hd] by ``rotation`` [..., hd/2] (broadcast).

    The rotation runs in float32 (float64 inputs stay float64) and the result is cast
    back to ``x.dtype``, so bf16/fp16 activations do not lose the angle precision.
    ``x`` may be a strided view (e.g. the q/k part of a fused projection): the complex
    view needs only a unit stride in the last dim and even strides elsewhere.
    """
    work = torch.promote_types(x.dtype, torch.float32)
    xw = x.to(work).unflatten(-1, (-1, 2))  # [..., hd/2, 2]
    if xw.stride(-1) != 1 or any(s % 2 for s in xw.stride()[:-1]) or xw.storage_offset() % 2:
        xw = xw.contiguous()
    z = torch.view_as_complex(xw)  # [..., hd/2]
    out = torch.view_as_real(z * rotation.to(z.dtype)).flatten(-2)  # [..., hd]
    return out.to(x.dtype)
