"""Which encoder states become a molecule's vector: the pooling module of the model.

A :class:`Pooling` names the states (``bos``: the first BOS copy; ``mean``: the mean over
real tokens) and the layer they are read from. It is checked once, where it is built;
everything downstream (the encoder, the model, every entry point) takes a ``Pooling`` and
never looks at a pooling string again.

Torch-free at import (the methods use tensor methods only), so the command line reads
:data:`POOLINGS` and :data:`DEFAULT_POOLING` while building its parser without torch.

Shapes: B batch, X padded width, N real tokens, S first tokens, d model dim.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from exlm_chem.model.token_layout import TokenLayout

__all__ = ["DEFAULT_POOLING", "POOLINGS", "Pooling", "masked_mean"]

POOLINGS = ("bos", "mean")
# mean over the trained encoder's states beat the BOS state in the frozen-feature probe of
# the CPU pre-training study (benchmarks/results/pretrain_cpu_study/README.md)
DEFAULT_POOLING = "mean"


@dataclasses.dataclass(frozen=True)
class Pooling:
    """Encoder states pooled into one vector per molecule.

    Parameters
    ----------
    states : {"bos", "mean"}, default "mean"
        ``mean``: the mean over real (expanded) tokens; ``bos``: the first BOS copy (the
        paper's fine-tuning pooling). With ``bos`` the pooled block computes its output
        for that one row per molecule only.
    layer : int, default -1
        The block whose output is pooled, indexed as ``encoder.blocks`` (``-1``: the last);
        blocks after it are not run. The final LayerNorm is applied to any layer: it is
        the only normalisation of a pre-LN transformer's residual stream.
    """

    states: str = DEFAULT_POOLING
    layer: int = -1

    def __post_init__(self) -> None:
        if self.states not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.states!r}")
        if isinstance(self.layer, bool) or not isinstance(self.layer, int):
            raise ValueError(f"pooling layer must be an integer, got {self.layer!r}")

    @classmethod
    def of(cls, pooling: str | Pooling) -> Pooling:
        """``pooling`` as a :class:`Pooling` (a name builds one with the last layer)."""
        return pooling if isinstance(pooling, Pooling) else cls(pooling)

    def depth(self, n_layers: int) -> int:
        """Blocks to run, 1..``n_layers``, for an encoder of ``n_layers`` blocks."""
        if not -n_layers <= self.layer < n_layers:
            raise ValueError(f"pooling layer {self.layer} is outside the encoder's "
                             f"{n_layers} blocks (-{n_layers}..{n_layers - 1})")
        return self.layer % n_layers + 1

    def query_rows(self, layout: TokenLayout) -> torch.Tensor | None:
        """Flat rows the last block run must compute (``[S]``); None: all of them."""
        return layout.firsts if self.states == "bos" else None

    def __call__(self, x: torch.Tensor, layout: TokenLayout,
                 padding_mask: torch.Tensor | None) -> torch.Tensor:
        """Pooled states [B, d] of the final states ``x``: ``[S, d]`` (the
        :meth:`query_rows` of ``bos``) or ``[N, d]`` (``mean``)."""
        if self.states == "bos":
            return layout.first_states(x)  # [B, d]
        return masked_mean(layout.unflatten(x), padding_mask)  # [B, X, d] -> [B, d]


def masked_mean(hidden: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
    """The mean of ``hidden`` [B, X, d] over the real tokens of each row (``padding_mask``
    [B, X], True on them; None: all): [B, d]. The ``mean`` pooling, and the pooled views of
    the pre-training's SMILES-equivalence loss."""
    if padding_mask is None:
        return hidden.mean(1)
    weights = padding_mask.unsqueeze(-1).to(hidden.dtype)  # [B, X, 1]
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)
