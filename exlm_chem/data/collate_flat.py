"""Masking and batching of a whole batch at once, with NumPy.

The per-molecule functions of :mod:`exlm_chem.data.collate` (``mask_tokens``, then
``collate_exlm`` or ``collate_mlm``) are the reference; these functions give exactly
the same batch for the same generator, without a Python step per molecule, so a
DataLoader worker collates a 64K-token batch in milliseconds. Both expand the states with
the one :func:`~exlm_chem.data.collate.expand_states`.

A batch travels flat: the molecules' ids back to back plus their lengths. Shapes:
B molecules, F flat tokens (sum of lengths), E flat expanded tokens, X, S, T as in
:mod:`exlm_chem.data.collate`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from exlm_chem.data.collate import (
    IGNORE_INDEX,
    PRIORITY_SCALE,
    ExLMBatch,
    MLMBatch,
    SpecialIds,
    expand_states,
    scatter_padded,
    segments,
)


class MaskedFlat(NamedTuple):
    """A masked batch, molecules back to back."""

    input_ids: np.ndarray  # [F] int64, masked tokens hold the [MASK] id
    original: np.ndarray  # [F] int64, the ids before masking
    masked: np.ndarray  # [F] bool, True where a token was masked
    lengths: np.ndarray  # [B] int64, tokens per molecule (BOS and EOS included)


def mask_flat(
    ids: np.ndarray, lengths: np.ndarray, ratio: float, rng: np.random.Generator,
    special: SpecialIds,
) -> MaskedFlat:
    """Mask every molecule of a flat batch as :func:`~exlm_chem.data.collate.mask_tokens` does.

    One ``rng.random`` call draws, molecule after molecule, the count's rounding u and
    the n token priorities: the same numbers, in the same order, as ``mask_tokens``
    called on each molecule in turn, so the masks are identical.
    """
    ids = np.asarray(ids, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    bad = (lengths < 3) | (ids[starts] != special.bos) | (ids[starts + lengths - 1] != special.eos)
    if bad.any():
        raise ValueError(f"molecule {int(np.flatnonzero(bad)[0])} of the batch is not "
                         "[BOS, at least one token, EOS]")
    n_ordinary = lengths - 2
    draws = rng.random(int((n_ordinary + 1).sum()))  # per molecule: u, then n priorities
    first = np.cumsum(n_ordinary + 1) - (n_ordinary + 1)  # [B] where each molecule's u is
    n_mask = np.minimum(np.maximum(1, (ratio * n_ordinary + draws[first]).astype(np.int64)),
                        n_ordinary)
    is_priority = np.ones(draws.size, dtype=bool)
    is_priority[first] = False
    molecule, rank = segments(n_ordinary)  # per ordinary token
    priority = (draws[is_priority] * PRIORITY_SCALE).astype(np.int64)
    # sort (molecule, priority) at once; stable, so ties keep the earlier token first
    order = np.argsort((molecule << 40) | priority, kind="stable")
    chosen = order[rank < n_mask[molecule]]  # rank: place in the sorted molecule segment
    masked = np.zeros(ids.size, dtype=bool)
    masked[starts[molecule[chosen]] + 1 + rank[chosen]] = True
    return MaskedFlat(np.where(masked, special.mask, ids), ids, masked, lengths)


def _targets(batch: MaskedFlat, special: SpecialIds) -> tuple[torch.Tensor, torch.Tensor]:
    """``[BOS, masked originals in order, EOS]`` per molecule, pad-filled [B, T]; and T_b."""
    segment, _ = segments(batch.lengths)
    owner = segment[batch.masked]  # [M] molecule of each masked token, in order
    counts = np.bincount(owner, minlength=batch.lengths.size)
    _, slot = segments(counts)
    n_rows = batch.lengths.size
    targets = np.full((n_rows, int(counts.max()) + 2), special.pad, dtype=np.int64)
    targets[owner, slot + 1] = batch.original[batch.masked]
    targets[:, 0] = special.bos
    targets[np.arange(n_rows), counts + 1] = special.eos
    return torch.from_numpy(targets), torch.from_numpy(counts + 2)


def collate_exlm_flat(batch: MaskedFlat, k: int, special: SpecialIds) -> ExLMBatch:
    """:func:`~exlm_chem.data.collate.collate_exlm` of a flat masked batch, vectorised."""
    targets, target_lengths = _targets(batch, special)
    return ExLMBatch(*expand_states(batch.input_ids, batch.lengths, k, special),
                     targets=targets, target_lengths=target_lengths.long())


def collate_mlm_flat(batch: MaskedFlat, special: SpecialIds) -> MLMBatch:
    """:func:`~exlm_chem.data.collate.collate_mlm` of a flat masked batch, vectorised."""
    row, col = segments(batch.lengths)
    shape = (batch.lengths.size, int(batch.lengths.max()))
    where = row * shape[1] + col
    labels = np.where(batch.masked, batch.original, IGNORE_INDEX)
    input_ids = scatter_padded(where, batch.input_ids, shape, special.pad)
    mask = np.zeros(shape[0] * shape[1], dtype=bool)
    mask[where] = True
    return MLMBatch(
        input_ids=input_ids,
        pos_original=scatter_padded(where, col, shape, 0),
        pos_copy=torch.zeros_like(input_ids),
        padding_mask=torch.from_numpy(mask.reshape(shape)),
        labels=scatter_padded(where, labels, shape, IGNORE_INDEX),
    )


__all__ = ["MaskedFlat", "collate_exlm_flat", "collate_mlm_flat", "mask_flat"]
