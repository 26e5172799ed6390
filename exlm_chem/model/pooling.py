"""Pooling of encoder states into one vector per molecule: ``bos`` or ``mean``."""

from __future__ import annotations

import torch

__all__ = ["POOLINGS", "pool", "pooled_states"]

POOLINGS = ("bos", "mean")


def pool(hidden: torch.Tensor, padding_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``bos``: the first BOS copy (position 0); ``mean``: mean over real tokens."""
    if pooling == "bos":
        return hidden[:, 0]
    if pooling == "mean":
        weights = padding_mask.unsqueeze(-1).to(hidden.dtype)  # [B, X, 1]
        return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)
    raise ValueError(f"pooling must be 'bos' or 'mean', got {pooling!r}")


def pooled_states(model: torch.nn.Module, input_ids: torch.Tensor, pos_original: torch.Tensor,
                  pos_copy: torch.Tensor, padding_mask: torch.Tensor,
                  pooling: str) -> torch.Tensor:
    """Pooled encoder states [B, d] of an expanded batch (each input [B, X]).

    ``bos`` asks the encoder for position 0 alone (``first_only``), so its last block
    skips every other row; ``mean`` pools all real tokens.
    """
    if pooling == "bos":
        return model(input_ids, pos_original, pos_copy, padding_mask, first_only=True)
    return pool(model(input_ids, pos_original, pos_copy, padding_mask), padding_mask, pooling)

