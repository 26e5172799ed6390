"""Masking, states expansion, 2D positions and batches for pre-training.

The hand-off from token ids to the encoder. A molecule's ids ``[BOS, ..., EOS]`` are
masked (every selected token becomes [MASK], no 80/10/10), then, for ExLM, BOS, every
[MASK] and EOS are expanded to ``k`` copies. Worked example (k=3)::

    ids        [BOS, a, M, b, M, M, c, EOS]
    expanded   [BOS,BOS,BOS, a, M,M,M, b, M,M,M, M,M,M, c, EOS,EOS,EOS]
    pos_orig   [0,0,0, 1, 2,2,2, 3, 4,4,4, 5,5,5, 6, 7,7,7]
    pos_copy   [1,2,3, 0, 1,2,3, 0, 1,2,3, 1,2,3, 0, 1,2,3]

The expanded copies are the DAG's states (S of them); the targets are
``[BOS, masked tokens in order, EOS]`` (T of them). :func:`expand_states` does the
expansion for a whole batch at once (pre-training, the vectorised collate of
:mod:`exlm_chem.data.collate_flat`, and the unmasked inputs of
:mod:`exlm_chem.data.inference_inputs`). The MLM twin sees the very same
masked ids, unexpanded, with cross-entropy labels on the masked positions.

Shapes: B batch, N tokens, X expanded tokens, S states, T targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

IGNORE_INDEX = -100
# masking priorities are integers below 2**40 so that a batch can sort (molecule, priority)
# pairs packed into one int64 (see collate_flat), with the same ties as one molecule alone
PRIORITY_SCALE = float(2**40)


class SpecialIds(NamedTuple):
    bos: int
    pad: int
    eos: int
    mask: int


class MaskedSample(NamedTuple):
    """One molecule after masking."""

    input_ids: np.ndarray  # [N] int64, masked positions hold the [MASK] id
    masked_positions: np.ndarray  # [M] int64, increasing
    masked_targets: np.ndarray  # [M] int64, the original ids at those positions


class ExLMBatch(NamedTuple):
    input_ids: torch.Tensor  # [B, X] expanded token ids, pad-filled
    pos_original: torch.Tensor  # [B, X] RoPE coordinate 1: index in the unexpanded sequence
    pos_copy: torch.Tensor  # [B, X] RoPE coordinate 2: copy index 1..k, 0 for ordinary tokens
    padding_mask: torch.Tensor  # [B, X] bool, True on real tokens
    state_index: torch.Tensor  # [B, S] position in X of each expanded state (0 on padding)
    state_lengths: torch.Tensor  # [B] number of states L_b
    targets: torch.Tensor  # [B, T] [BOS, masked ids..., EOS], pad-filled
    target_lengths: torch.Tensor  # [B] T_b = masked count + 2


class MLMBatch(NamedTuple):
    input_ids: torch.Tensor  # [B, N]
    pos_original: torch.Tensor  # [B, N]
    pos_copy: torch.Tensor  # [B, N] all zeros: nothing is expanded
    padding_mask: torch.Tensor  # [B, N] bool, True on real tokens
    labels: torch.Tensor  # [B, N] original id on masked positions, IGNORE_INDEX elsewhere


def mask_tokens(
    ids: np.ndarray,
    ratio: float,
    rng: np.random.Generator,
    special: SpecialIds,
    candidate_groups: Sequence[np.ndarray] | None = None,
) -> MaskedSample:
    """Mask a share ``ratio`` of the ordinary tokens of one ``[BOS, ..., EOS]`` sequence.

    The count is ``floor(ratio * n + u)``, u ~ U(0, 1) (unbiased rounding), at least one.
    The masked tokens are the ``count`` ordinary tokens with the smallest priorities
    ``floor(2**40 * v)``, v ~ U(0, 1) per token (ties: the earlier token), which is a
    uniform draw of ``count`` of them. The generator gives u first, then the n values v:
    :func:`exlm_chem.data.collate_flat.mask_flat` draws a whole batch in one call and masks
    exactly the same tokens. With ``candidate_groups`` (e.g. the token positions of each
    BRICS fragment) whole groups are masked, in random order, until the count is reached.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size < 3 or ids[0] != special.bos or ids[-1] != special.eos:
        raise ValueError("mask_tokens needs [BOS, at least one token, EOS]")
    n_ordinary = ids.size - 2
    n_mask = max(1, int(ratio * n_ordinary + rng.random()))
    n_mask = min(n_mask, n_ordinary)
    if candidate_groups:
        order = rng.permutation(len(candidate_groups))
        chosen: list[int] = []
        for g in order:  # whole groups, never past the budget (but at least one group)
            group = candidate_groups[g]
            if not chosen or len(chosen) + len(group) <= n_mask:
                chosen.extend(int(p) for p in group)
        positions = np.unique(np.asarray(chosen, dtype=np.int64))
    else:
        priority = (rng.random(n_ordinary) * PRIORITY_SCALE).astype(np.int64)
        positions = np.sort(np.argsort(priority, kind="stable")[:n_mask]) + 1
    masked = ids.copy()
    masked[positions] = special.mask
    return MaskedSample(masked, positions.astype(np.int64), ids[positions])


class Expansion(NamedTuple):
    """A batch with BOS, every [MASK] and EOS expanded, pad-filled (the first six fields of
    :class:`ExLMBatch`)."""

    input_ids: torch.Tensor  # [B, X]
    pos_original: torch.Tensor  # [B, X]
    pos_copy: torch.Tensor  # [B, X]
    padding_mask: torch.Tensor  # [B, X] bool
    state_index: torch.Tensor  # [B, S]
    state_lengths: torch.Tensor  # [B]


def segments(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segment id and rank inside the segment of every flat element, each [sum(lengths)]."""
    starts = np.cumsum(lengths) - lengths  # [B]
    segment = np.repeat(np.arange(lengths.size), lengths)
    return segment, np.arange(int(lengths.sum())) - starts[segment]


def scatter_padded(flat_index: np.ndarray, values: np.ndarray | int, shape: tuple[int, int],
                   fill: int) -> torch.Tensor:
    """A [rows, cols] int64 tensor of ``fill`` with ``values`` at row-major ``flat_index``."""
    out = np.full(shape[0] * shape[1], fill, dtype=np.int64)
    out[flat_index] = values
    return torch.from_numpy(out.reshape(shape))


def _row_major(rows: np.ndarray, lengths: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Index into a [len(lengths), width] matrix of each element of the rows laid end to end
    (rows[i] is the row of element i; each row's elements consecutive), and its column."""
    starts = np.cumsum(lengths) - lengths
    col = np.arange(rows.size) - starts[rows]
    return rows * width + col, col


def expand_states(ids: np.ndarray, lengths: np.ndarray, k: int, special: SpecialIds) -> Expansion:
    """Expand BOS, each [MASK] and EOS to ``k`` copies: the one states expansion.

    Parameters
    ----------
    ids : numpy.ndarray
        [F] int64, the batch's molecules back to back (masked or not).
    lengths : numpy.ndarray
        [B] int64, tokens per molecule.
    k : int
        Copies per expanded token; copy indices 1..k, 0 for ordinary tokens.
    special : SpecialIds

    Returns
    -------
    Expansion
        Pad-filled [B, X] (and [B, S]) tensors, as in the module docstring's example.
    """
    ids = np.asarray(ids, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n_rows = lengths.size
    segment, position = segments(lengths)  # [F]
    expand = (ids == special.bos) | (ids == special.mask) | (ids == special.eos)
    repeats = np.where(expand, k, 1)  # [F]
    group_end = np.cumsum(repeats)  # [F]
    source = np.repeat(np.arange(ids.size), repeats)  # [E] token each expanded slot copies
    row = segment[source]  # [E]
    # copy index 1..k inside an expanded group, 0 for ordinary tokens
    copy = np.arange(source.size) - (group_end - repeats)[source] + 1
    copy[~expand[source]] = 0
    width = np.bincount(row, minlength=n_rows)  # [B] expanded length
    shape = (n_rows, int(width.max()))
    where, col = _row_major(row, width, shape[1])
    state = copy > 0
    n_states = np.bincount(row[state], minlength=n_rows)  # [B]
    state_shape = (n_rows, int(n_states.max()))
    state_where, _ = _row_major(row[state], n_states, state_shape[1])
    mask = np.zeros(shape[0] * shape[1], dtype=bool)
    mask[where] = True
    return Expansion(
        input_ids=scatter_padded(where, ids[source], shape, special.pad),
        pos_original=scatter_padded(where, position[source], shape, 0),
        pos_copy=scatter_padded(where, copy, shape, 0),
        padding_mask=torch.from_numpy(mask.reshape(shape)),
        state_index=scatter_padded(state_where, col[state], state_shape, 0),
        state_lengths=torch.from_numpy(n_states.astype(np.int64)),
    )


def _pad(rows: Sequence[np.ndarray], value: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return torch.from_numpy(out)


def collate_exlm(samples: Sequence[MaskedSample], k: int, special: SpecialIds) -> ExLMBatch:
    """Batch masked samples for the ExLM objective (expanded, with DAG bookkeeping)."""
    expansion = expand_states(np.concatenate([s.input_ids for s in samples]),
                              np.array([s.input_ids.size for s in samples]), k, special)
    targets = [np.concatenate(([special.bos], s.masked_targets, [special.eos])) for s in samples]
    return ExLMBatch(
        *expansion,
        targets=_pad(targets, special.pad),
        target_lengths=torch.tensor([len(t) for t in targets], dtype=torch.long),
    )


def collate_mlm(samples: Sequence[MaskedSample], special: SpecialIds) -> MLMBatch:
    """Batch the same masked samples for the plain-MLM twin (no expansion)."""
    labels = []
    for s in samples:
        row = np.full(s.input_ids.size, IGNORE_INDEX, dtype=np.int64)
        row[s.masked_positions] = s.masked_targets
        labels.append(row)
    input_ids = _pad([s.input_ids for s in samples], special.pad)
    return MLMBatch(
        input_ids=input_ids,
        pos_original=_pad([np.arange(s.input_ids.size) for s in samples], 0),
        pos_copy=torch.zeros_like(input_ids),
        padding_mask=_pad([np.ones(s.input_ids.size, dtype=np.int64) for s in samples], 0).bool(),
        labels=_pad(labels, IGNORE_INDEX),
    )
