"""Pooling of encoder states into one vector per molecule: ``bos`` or ``mean``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations and tensor methods only: the CLI reads DEFAULT_POOLING torch-free
    import torch

__all__ = ["DEFAULT_POOLING", "POOLINGS", "pool", "pooled_states", "pooled_states_each"]

POOLINGS = ("bos", "mean")
# mean over the trained encoder's states beat the BOS state in issue 30's frozen-feature
# probe (benchmarks/results/pretrain_cpu_study/README.md)
DEFAULT_POOLING = "mean"


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
    return pooled_states_each(model, input_ids, pos_original, pos_copy, padding_mask,
                              (pooling,))[pooling]


def pooled_states_each(model: torch.nn.Module, input_ids: torch.Tensor,
                       pos_original: torch.Tensor, pos_copy: torch.Tensor,
                       padding_mask: torch.Tensor,
                       poolings: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Each pooling [B, d] of one forward pass over an expanded batch (each input [B, X]).

    Comparing poolings then costs one encoder pass, not one per pooling; ``("bos",)``
    alone still takes the ``first_only`` shortcut.
    """
    for pooling in poolings:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be 'bos' or 'mean', got {pooling!r}")
    if tuple(poolings) == ("bos",):
        return {"bos": model(input_ids, pos_original, pos_copy, padding_mask, first_only=True)}
    hidden = model(input_ids, pos_original, pos_copy, padding_mask)  # [B, X, d]
    return {pooling: pool(hidden, padding_mask, pooling) for pooling in poolings}

