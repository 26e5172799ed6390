"""Masking, states expansion, 2D positions and batches for pre-training.

The hand-off from token ids to the encoder. A molecule's ids ``[BOS, ..., EOS]`` are
masked (every selected token becomes [MASK], no 80/10/10), then, for ExLM, BOS, every
[MASK] and EOS are expanded to ``k`` copies. Worked example (k=3)::

    ids        [BOS, a, M, b, M, M, c, EOS]
    expanded   [BOS,BOS,BOS, a, M,M,M, b, M,M,M, M,M,M, c, EOS,EOS,EOS]
    pos_orig   [0,0,0, 1, 2,2,2, 3, 4,4,4, 5,5,5, 6, 7,7,7]
    pos_copy   [1,2,3, 0, 1,2,3, 0, 1,2,3, 1,2,3, 0, 1,2,3]

The expanded copies are the DAG's states (S of them); the targets are
``[BOS, masked tokens in order, EOS]`` (T of them). The MLM twin sees the very same
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


def expand_states(sample: MaskedSample, k: int, special: SpecialIds):
    """Expand BOS, each [MASK] and EOS of one sample to ``k`` copies.

    Returns numpy arrays ``(expanded_ids [X], pos_original [X], pos_copy [X],
    state_index [S], targets [T])``.
    """
    ids = sample.input_ids
    expand = (ids == special.bos) | (ids == special.mask) | (ids == special.eos)
    repeats = np.where(expand, k, 1)  # [N]
    expanded_ids = np.repeat(ids, repeats)  # [X]
    pos_original = np.repeat(np.arange(ids.size), repeats)  # [X]
    # copy index 1..k within each expanded group, 0 for ordinary tokens
    starts = np.repeat(np.cumsum(repeats) - repeats, repeats)  # [X] start of each group
    pos_copy = np.arange(expanded_ids.size) - starts + 1
    pos_copy = np.where(np.repeat(expand, repeats), pos_copy, 0)
    state_index = np.flatnonzero(pos_copy > 0)  # [S]
    targets = np.concatenate(([special.bos], sample.masked_targets, [special.eos]))
    return expanded_ids, pos_original, pos_copy, state_index, targets


def _pad(rows: Sequence[np.ndarray], value: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return torch.from_numpy(out)


def collate_exlm(samples: Sequence[MaskedSample], k: int, special: SpecialIds) -> ExLMBatch:
    """Batch masked samples for the ExLM objective (expanded, with DAG bookkeeping)."""
    parts = [expand_states(s, k, special) for s in samples]
    ids, pos_o, pos_c, states, targets = zip(*parts, strict=True)
    input_ids = _pad(ids, special.pad)
    return ExLMBatch(
        input_ids=input_ids,
        pos_original=_pad(pos_o, 0),
        pos_copy=_pad(pos_c, 0),
        padding_mask=_pad([np.ones(len(x), dtype=np.int64) for x in ids], 0).bool(),
        state_index=_pad(states, 0),
        state_lengths=torch.tensor([len(s) for s in states], dtype=torch.long),
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


def expand_for_inference(
    ids_list: Sequence[np.ndarray], k: int, special: SpecialIds
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fine-tuning/embedding input: ``[BOS] SMILES [EOS]`` with BOS and EOS expanded.

    Nothing is masked, so only BOS and EOS get ``k`` copies, as in pre-training. Returns
    ``(input_ids, pos_original, pos_copy, padding_mask)``, each [B, X]; the first BOS copy
    sits at position 0 of every row.
    """
    empty = np.zeros(0, dtype=np.int64)
    parts = [
        expand_states(MaskedSample(np.asarray(ids, dtype=np.int64), empty, empty), k, special)
        for ids in ids_list
    ]
    ids, pos_o, pos_c, _, _ = zip(*parts, strict=True)
    return (
        _pad(ids, special.pad),
        _pad(pos_o, 0),
        _pad(pos_c, 0),
        _pad([np.ones(len(x), dtype=np.int64) for x in ids], 0).bool(),
    )
