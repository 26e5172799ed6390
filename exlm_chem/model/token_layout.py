"""Padding-free token layout for the encoder: real tokens in one flat list, attention by groups.

Molecules of a data set differ in length several-fold, so much of a padded batch can be
padding, and every position-wise op (LayerNorm, projections, FFN) would spend time and
saved-activation memory on it. The encoder therefore runs those ops
on the real tokens only, ``[N, d]``, and attention (the one op that mixes tokens) on groups
of samples of similar length, each padded only to its own longest sample. Attention is
per sample, so grouping does not change any output; RoPE positions travel with the tokens.

Shapes: B batch, X padded width, N real tokens, Bg/Xg samples/width of one group.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import torch

#: A group grows while its padded size stays within this share above its real tokens.
GROUP_SLACK = 0.15
#: Samples of one length this many or more form a group of their own (no padding at all):
#: the length-sorted batches of embedding and prediction are mostly such runs.
EQUAL_RUN = 8


class AttentionGroup(NamedTuple):
    start: int  # first flat token of the group
    stop: int  # one past its last flat token
    batch: int  # Bg samples
    width: int  # Xg: the longest of them
    gather: torch.Tensor | None  # [Bg*Xg] flat token of each padded slot; None: no padding
    real: torch.Tensor | None  # [stop-start] slots of the real tokens; None: all slots
    key_mask: torch.Tensor | None  # [Bg, 1, 1, Xg] True = attend; None: no padding


class TokenLayout(NamedTuple):
    batch: int  # B
    width: int  # X
    slots: torch.Tensor | None  # [N] padded slot (b*X + x) of each flat token; None: all
    groups: list[AttentionGroup]
    firsts: torch.Tensor  # [S] flat index of each non-empty sample's first token, group order
    first_owner: torch.Tensor  # [S] that sample's row b
    first_at_zero: torch.Tensor | None  # [S] whether it sits in slot 0; None: all do

    def flatten(self, padded: torch.Tensor) -> torch.Tensor:
        """``[B, X, ...]`` -> the real tokens ``[N, ...]`` in flat order."""
        flat = padded.reshape(self.batch * self.width, *padded.shape[2:])
        return flat if self.slots is None else flat.index_select(0, self.slots)

    def unflatten(self, flat: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` -> ``[B, X, C]`` with zeros at padding."""
        if self.slots is None:
            return flat.view(self.batch, self.width, *flat.shape[1:])
        out = flat.new_zeros(self.batch * self.width, *flat.shape[1:])
        out = out.index_copy(0, self.slots, flat)
        return out.view(self.batch, self.width, *flat.shape[1:])

    def first_states(self, firsts: torch.Tensor) -> torch.Tensor:
        """``[S, C]`` rows of :attr:`firsts` -> ``[B, C]``: slot 0 of every sample, zeros
        where slot 0 is padding (as :meth:`unflatten` would give there)."""
        if self.first_at_zero is None and self.slots is None:
            return firsts  # no padding: one first token per sample, already in row order
        keep = self.first_at_zero
        rows, values = (self.first_owner, firsts) if keep is None else \
            (self.first_owner[keep], firsts[keep])
        out = firsts.new_zeros(self.batch, *firsts.shape[1:])
        return out.index_copy(0, rows, values)


def _groups(lengths: np.ndarray, slack: float,
            equal_run: int = EQUAL_RUN) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of the ascending ``lengths`` (all > 0), greedily grown
    while ``count * longest <= (1 + slack) * real tokens``.

    A run of at least ``equal_run`` samples of one length is a group of its own: its flat
    range is already ``[Bg, Xg]``, so attention needs no gather, key mask or output
    selection there.
    """
    ranges, start, total, i = [], 0, 0, 0
    for n, run in itertools.groupby(lengths.tolist()):
        j = i + sum(1 for _ in run)  # [i, j): samples of length n
        if j - i >= equal_run:
            if i > start:
                ranges.append((start, i))
            ranges.append((i, j))
            start, total = j, 0
        else:
            for k in range(i, j):
                if k > start and (k - start + 1) * n > (1 + slack) * (total + n):
                    ranges.append((start, k))
                    start, total = k, 0
                total += n
        i = j
    if start < len(lengths):
        ranges.append((start, len(lengths)))
    return ranges


def _padded_layout(padding_mask: torch.Tensor, batch: int, width: int) -> TokenLayout:
    """Every slot a token, one group with a key mask: built without reading the mask.

    Off the CPU, a layout that follows the real lengths would wait for the device on every
    step (the lengths must reach the host); the padded layout keeps the device queue full
    and its outputs at padding are unspecified finite values, as in format-2 code.
    """
    rows = torch.arange(batch, device=padding_mask.device)
    # a sample without a real token would give SDPA an all-False key row (NaN): let it
    # attend everywhere, its outputs are padding anyway
    empty = ~padding_mask.any(dim=-1, keepdim=True)  # [B, 1]
    key_mask = (padding_mask | empty)[:, None, None, :]  # [B, 1, 1, X]
    return TokenLayout(batch, width, None,
                       [AttentionGroup(0, batch * width, batch, width, None, None, key_mask)],
                       rows * width, rows, None)


def token_layout(padding_mask: torch.Tensor | None, batch: int, width: int,
                 slack: float = GROUP_SLACK) -> TokenLayout:
    """The flat layout of a batch: samples by ascending length, real tokens in position
    order; samples without a real token take no part (their outputs are zeros).

    Parameters
    ----------
    padding_mask : BoolTensor [B, X] or None
        True at real tokens; None (or all True) means no padding. On a device other than
        the CPU the mask is not read: every slot is a token (:func:`_padded_layout`).
    """
    if padding_mask is not None and padding_mask.device.type != "cpu":
        return _padded_layout(padding_mask, batch, width)
    if padding_mask is None or bool(padding_mask.all()):
        device = None if padding_mask is None else padding_mask.device
        rows = torch.arange(batch, device=device)
        return TokenLayout(batch, width, None, [AttentionGroup(0, batch * width, batch, width,
                                                               None, None, None)],
                           rows * width, rows, None)
    device = padding_mask.device
    mask = padding_mask.cpu()
    lengths = mask.sum(1).numpy()  # [B]
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    sorted_lengths = lengths[order]
    offsets = np.concatenate([[0], np.cumsum(sorted_lengths)])  # flat start of each sample
    sample, position = mask[torch.from_numpy(order)].nonzero(as_tuple=True)  # ascending
    slots = torch.from_numpy(order)[sample] * width + position  # [N]
    groups = []
    for lo, hi in _groups(sorted_lengths, slack):
        n = sorted_lengths[lo:hi]
        Bg, Xg = hi - lo, int(n.max())
        start, stop = int(offsets[lo]), int(offsets[hi])
        if (n == Xg).all():  # equal lengths: the flat range is already [Bg, Xg]
            groups.append(AttentionGroup(start, stop, Bg, Xg, None, None, None))
            continue
        j = np.arange(Xg)
        real = j[None, :] < n[:, None]  # [Bg, Xg]
        # padded slots point at the sample's last real token: masked keys, ignored queries
        gather = offsets[lo:hi, None] + np.minimum(j[None, :], n[:, None] - 1)  # [Bg, Xg]
        groups.append(AttentionGroup(
            start, stop, Bg, Xg,
            torch.from_numpy(gather.reshape(-1)).to(device),
            torch.from_numpy(np.flatnonzero(real)).to(device),
            torch.from_numpy(real)[:, None, None, :].to(device)))
    owner = torch.from_numpy(order)
    firsts = torch.from_numpy(offsets[:-1])
    at_zero = mask[owner, 0]
    return TokenLayout(batch, width, slots.to(device), groups, firsts.to(device),
                       owner.to(device), at_zero.to(device))
