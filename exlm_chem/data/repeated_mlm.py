"""Repeated MLM (paper, section 3 and appendices C and E.1).

Each ordinary token of ``[BOS] t_1 ... t_n [EOS]`` is repeated k times before masking::

    ids        [BOS, a, b, EOS]                       k = 3
    repeated   [BOS, a, a, a, b, b, b, EOS]
    masked     [BOS, a, M, a, M, M, M, EOS]           b is fully masked (corrupted)

Every copy is masked independently with probability p (a Bernoulli draw per copy, not a
fixed count), so a share p of the input is ``[MASK]`` whatever k is, while a token's
information is lost only when all k copies are masked: the expected share of such
*corrupted* tokens is ``p**k`` (appendix C). BOS and EOS are neither repeated nor masked.
Each masked copy is a prediction target for its original token.

The result is an ordinary :class:`~exlm_chem.data.collate.MaskedSample` over the repeated
sequence, so both objectives batch it with the existing collate functions. With
``collate_mlm`` the positions are ``0 .. 2 + n*k - 1``, consecutive over the repeated
sequence, like the paper's BERT (whose position table grows to ``512 * k``); with
``collate_exlm`` each masked copy is further expanded to the model's ``k_states`` states.

Shapes: n ordinary tokens of a molecule, k copies each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.collate import MaskedSample, SpecialIds

__all__ = [
    "CorruptionStats",
    "RepeatedBatch",
    "RepeatedSample",
    "corruption_stats",
    "mask_repeated",
    "repeat_tokens",
    "repeated_mlm_collate",
]


class RepeatedSample(NamedTuple):
    """One molecule after repetition and masking."""

    sample: MaskedSample  # over the repeated sequence [2 + n*k]
    copy_masked: np.ndarray  # [n, k] bool: copy j of token i is masked


class RepeatedBatch(NamedTuple):
    """A collated batch plus what is needed to find the fully masked tokens."""

    batch: Any  # ExLMBatch or MLMBatch, exactly what the objectives take
    k: int  # copies per token
    ratio: float  # per-copy mask probability p
    copy_masked: list[np.ndarray]  # per sample, [n_b, k] bool


class CorruptionStats(NamedTuple):
    """Measured masking statistics against the paper's expectations."""

    k: int
    ratio: float
    n_tokens: int  # ordinary tokens N (before repetition)
    n_masked_copies: int
    masked_share: float  # masked copies / (N * k); expected p
    n_fully_masked: int  # tokens with all k copies masked
    fully_masked_share: float  # n_fully_masked / N; expected p**k
    expected_share: float  # p**k
    standard_error: float  # sqrt(p**k (1 - p**k) / N), appendix C's Var(s)


def repeat_tokens(ids: np.ndarray | Sequence[int], k: int) -> np.ndarray:
    """Repeat every ordinary token of ``[BOS, t_1..t_n, EOS]`` k times.

    Parameters
    ----------
    ids : array-like of int
        One sequence with BOS first and EOS last (only the ends are kept single).
    k : int
        Copies per ordinary token, >= 1.

    Returns
    -------
    numpy.ndarray
        int64 [2 + n*k]: ``[BOS, t_1 x k, ..., t_n x k, EOS]``.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size < 2:
        raise ValueError(f"expected one [BOS, ..., EOS] sequence, got shape {ids.shape}")
    repeats = np.full(ids.size, int(k))
    repeats[[0, -1]] = 1
    return np.repeat(ids, repeats)


def mask_repeated(
    ids: np.ndarray | Sequence[int],
    k: int,
    ratio: float,
    rng: np.random.Generator,
    special: SpecialIds,
    ensure_one: bool = False,
) -> RepeatedSample:
    """Repeat the tokens k times, then mask each copy independently with probability p.

    Parameters
    ----------
    ids : array-like of int
        ``[BOS, at least one token, EOS]``.
    k : int
        Copies per token.
    ratio : float
        p, the per-copy mask probability, in (0, 1].
    rng : numpy.random.Generator
    special : SpecialIds
    ensure_one : bool
        If no copy at all was drawn, mask one copy chosen uniformly. Off by default: it
        biases the statistics of short molecules (no mask has probability
        ``(1 - p)**(n*k)``, 0.44 for n = 5, k = 1, p = 0.15); :func:`repeated_mlm_collate`
        guards a whole batch instead.

    Returns
    -------
    RepeatedSample
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size < 3 or ids[0] != special.bos or ids[-1] != special.eos:
        raise ValueError("mask_repeated needs [BOS, at least one token, EOS]")
    if not 0.0 < float(ratio) <= 1.0:
        raise ValueError(f"ratio must be in (0, 1], got {ratio!r}")
    n = ids.size - 2
    copy_masked = rng.random((n, k)) < ratio  # [n, k]: per-copy Bernoulli(p)
    if ensure_one and not copy_masked.any():
        copy_masked.flat[rng.integers(n * k)] = True
    return _apply_mask(ids, copy_masked, special)


def _apply_mask(ids: np.ndarray, copy_masked: np.ndarray, special: SpecialIds
                ) -> RepeatedSample:
    repeated = repeat_tokens(ids, copy_masked.shape[1])
    # token i's copy j sits at 1 + i*k + j, so row-major order is position order
    positions = 1 + np.flatnonzero(copy_masked.ravel())
    masked = repeated.copy()
    masked[positions] = special.mask
    return RepeatedSample(MaskedSample(masked, positions, repeated[positions]), copy_masked)


def repeated_mlm_collate(
    rows: Sequence[np.ndarray],
    k: int,
    ratio: float,
    rng: np.random.Generator,
    special: SpecialIds,
    objective: str = "mlm",
    k_states: int = 2,
    ensure_one: bool = True,
) -> RepeatedBatch:
    """Repeat, mask and collate a batch for either objective.

    Parameters
    ----------
    rows : sequence of array-like
        Unmasked ``[BOS, ..., EOS]`` id sequences (e.g. ``TokenizedCorpus.get(i)``).
    k, ratio, rng, special
        As in :func:`mask_repeated` (molecules are drawn in order from one ``rng``).
    ensure_one : bool
        If no copy of the whole batch was masked, mask one copy of a random molecule:
        the MLM loss needs at least one target per batch. Unlike a per-molecule guard
        this never happens in practice for real batches, so the statistics stay exact.
    objective : str
        "mlm" (``collate_mlm``) or "exlm" (``collate_exlm`` with ``k_states``).
    k_states : int
        ExLM's expanded states per ``[MASK]`` copy.

    Returns
    -------
    RepeatedBatch
        ``.batch`` goes straight into ``exlm_loss`` / ``mlm_loss``.
    """
    from exlm_chem.data.collate import collate_exlm, collate_mlm

    if objective not in ("mlm", "exlm"):
        raise ValueError(f"objective must be 'mlm' or 'exlm', got {objective!r}")
    if not rows:
        raise ValueError("an empty batch")
    repeated = [mask_repeated(ids, k, ratio, rng, special) for ids in rows]
    if ensure_one and not any(r.copy_masked.any() for r in repeated):
        row = int(rng.integers(len(repeated)))
        copy_masked = repeated[row].copy_masked.copy()
        copy_masked.flat[rng.integers(copy_masked.size)] = True
        repeated[row] = _apply_mask(np.asarray(rows[row], dtype=np.int64), copy_masked, special)
    samples = [r.sample for r in repeated]
    batch = (collate_exlm(samples, k_states, special) if objective == "exlm"
             else collate_mlm(samples, special))
    return RepeatedBatch(batch, int(k), float(ratio), [r.copy_masked for r in repeated])


def corruption_stats(
    copy_masked: RepeatedBatch | Sequence[np.ndarray], ratio: float | None = None
) -> CorruptionStats:
    """Share of masked copies and of fully masked (corrupted) tokens.

    Parameters
    ----------
    copy_masked : RepeatedBatch or sequence of [n_b, k] bool arrays
        One or many batches' masks (concatenate the lists to pool batches).
    ratio : float, optional
        p; taken from the batch when a RepeatedBatch is given.

    Returns
    -------
    CorruptionStats
    """
    if isinstance(copy_masked, RepeatedBatch):
        ratio = copy_masked.ratio if ratio is None else ratio
        copy_masked = copy_masked.copy_masked
    if ratio is None:
        raise ValueError("ratio is needed when plain mask arrays are given")
    arrays = [np.asarray(a, dtype=bool) for a in copy_masked]
    if not arrays:
        raise ValueError("no masks given")
    ks = {a.shape[1] for a in arrays}
    if len(ks) != 1:
        raise ValueError(f"masks with different k: {sorted(ks)}")
    k = ks.pop()
    stacked = np.concatenate(arrays)  # [N, k]
    n_tokens = stacked.shape[0]
    expected = float(ratio) ** k
    fully = int(stacked.all(axis=1).sum())
    return CorruptionStats(
        k=k, ratio=float(ratio), n_tokens=n_tokens, n_masked_copies=int(stacked.sum()),
        masked_share=float(stacked.mean()), n_fully_masked=fully,
        fully_masked_share=fully / n_tokens, expected_share=expected,
        standard_error=math.sqrt(expected * (1.0 - expected) / n_tokens),
    )
