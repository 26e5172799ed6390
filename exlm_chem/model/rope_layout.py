"""Weight layouts of the q/k projections, and the conversion between them.

RoPE rotates pairs of head dims; which dims form a pair is a property of the weights,
because the fused ``qkv`` projection decides what lands in each dim. Format versions 1
and 2 (the first shipped checkpoints) paired dim ``j`` with ``j + hd/4`` inside each half
of a head (NeoX "rotate half"); from version 3 on, pairs are adjacent, ``(2p, 2p+1)``, so
that RoPE is one complex multiply (:mod:`exlm_chem.model.rope`). Loading converts through
:data:`exlm_chem.model.checkpoint_format.CONVERTERS`.

Moving the q and k rows of every head by the same permutation leaves every attention
score, hence the model's function, unchanged: q.k is a sum over dims, and the rotation
pairs the same two values in both layouts. v and everything else stay as they are.

Shapes: d model dim, H heads, hd head dim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from exlm_chem.model.config import ExLMConfig

#: Checkpoint format version from which q/k pairs are interleaved; older ones are not.
INTERLEAVED_SINCE = 3

# the fused projection of any encoder block, at any prefix ("encoder.", a fine-tuning
# net's "encoder.", or none for a bare ExLMEncoder state)
_QKV = re.compile(r"(^|\.)blocks\.\d+\.attn\.qkv\.(weight|bias)$")


def halves_to_interleaved_index(head_dim: int) -> torch.Tensor:
    """``index[i]`` = the old (rotate-half) dim that new (interleaved) dim ``i`` takes.

    Inside each half of width ``hd/2``, pair ``j`` was dims ``(j, j + hd/4)``; it becomes
    dims ``(2j, 2j+1)`` of that half.
    """
    if head_dim % 4:
        raise ValueError(f"head_dim={head_dim} must be divisible by 4 for 2D RoPE")
    half, quarter = head_dim // 2, head_dim // 4
    j = torch.arange(quarter)
    one_half = torch.stack([j, j + quarter], dim=-1).flatten()  # [hd/2]: 0, q, 1, q+1, ...
    return torch.cat([one_half, one_half + half])  # [hd]


def permute_qk_to_interleaved(
    state_dict: Mapping[str, torch.Tensor], config: ExLMConfig
) -> dict[str, torch.Tensor]:
    """A copy of ``state_dict`` with the q/k rows of every ``qkv`` moved to interleaved pairs.

    Pure: the input is not modified. Works on the state of an ``ExLMModel``, an
    ``ExLMEncoder`` or anything that holds one (keys ``...blocks.<i>.attn.qkv.weight``
    and ``.bias``); other keys pass through as the same tensors.
    """
    index = halves_to_interleaved_index(config.head_dim)
    out = dict(state_dict)
    H, hd = config.n_heads, config.head_dim
    for name, tensor in state_dict.items():
        if not _QKV.search(name):
            continue
        if tensor.shape[0] != 3 * H * hd:
            raise ValueError(f"{name} has {tensor.shape[0]} rows; config implies 3 x "
                             f"{H} heads x {hd} = {3 * H * hd}")
        rows = tensor.reshape(3, H, hd, *tensor.shape[1:])  # [3, H, hd, (d)]
        moved = torch.cat([rows[:2, :, index.to(tensor.device)], rows[2:]])  # v untouched
        out[name] = moved.reshape(tensor.shape)
    return out


def to_current_layout(
    state_dict: Mapping[str, torch.Tensor], config: ExLMConfig, format_version: int | None
) -> dict[str, torch.Tensor]:
    """Weights saved under ``format_version`` (None: written before versions existed, i.e.
    version 1) in the layout of the running code (for weights that do not go through
    :func:`~exlm_chem.model.checkpoint_format.read_parts`, such as pickled estimators)."""
    if format_version is None or format_version < INTERLEAVED_SINCE:
        return permute_qk_to_interleaved(state_dict, config)
    return dict(state_dict)
