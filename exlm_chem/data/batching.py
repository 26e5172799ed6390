"""Length-bucketed batches: the one batching path of embedding, prediction, fine-tuning
and pre-training.

A batch is padded to its longest molecule, and molecules of a data set differ in length
several-fold, so a batch of random molecules is mostly padding. Inference takes the
molecules in length order (:func:`sorted_batches`); training cannot, since the order of
a sorted pass never changes, so it shuffles, sorts within pools of many batches and
shuffles the batches: into batches of so many molecules for fine-tuning
(:func:`bucketed_batches`), of so many padded tokens for pre-training
(:func:`token_budget_batches`, served epoch after epoch by :class:`BatchStream`). Either
way every index appears exactly once and a batch holds molecules of similar length.

Shapes: N molecules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

__all__ = ["MAX_PADDING", "POOL_BATCHES", "BatchStream", "bucketed_batches", "padding_share",
           "sorted_batches", "token_budget_batches"]

#: Inference batches end before their padding would exceed this share of their slots.
MAX_PADDING = 0.15

#: Training pools hold this many batches: large enough that a pool's sorted molecules
#: cut into batches of similar length, small enough that batches still mix across epochs.
POOL_BATCHES = 32


def sorted_batches(lengths: Sequence[int] | np.ndarray, batch_size: int,
                   max_padding: float | None = MAX_PADDING) -> list[np.ndarray]:
    """Inference batches in ascending length order (stable: ties keep input order).

    A batch ends at ``batch_size`` molecules, or earlier where the next molecule would
    take its padding above ``max_padding`` of its slots (None: never), so the long tail
    of a data set is cut into smaller batches instead of padding many short molecules.

    Examples
    --------
    >>> [b.tolist() for b in sorted_batches([5, 1, 3, 1], 2)]
    [[1, 3], [2], [0]]
    >>> [b.tolist() for b in sorted_batches([5, 1, 3, 1], 2, max_padding=None)]
    [[1, 3], [2, 0]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    lengths = np.asarray(lengths)
    order = np.argsort(lengths, kind="stable")
    if max_padding is None:
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    batches, start, real = [], 0, 0
    for i, n in enumerate(lengths[order].tolist()):
        count = i - start + 1
        if i > start and (count > batch_size or real + n < (1 - max_padding) * count * n):
            batches.append(order[start:i])
            start, real = i, 0
        real += n
    if len(order):
        batches.append(order[start:])
    return batches


def bucketed_batches(lengths: Sequence[int] | np.ndarray, batch_size: int,
                     rng: np.random.Generator,
                     pool_batches: int = POOL_BATCHES) -> list[np.ndarray]:
    """Shuffled index batches of similar lengths, for one training epoch.

    A random permutation is cut into pools of ``pool_batches * batch_size`` molecules;
    each pool is sorted by length and cut into batches, and the batches of all pools are
    shuffled. There are ``ceil(N / batch_size)`` batches, as with plain random batches, so
    a learning-rate schedule counted in steps is unchanged.
    """
    if batch_size < 1 or pool_batches < 1:
        raise ValueError(f"batch_size and pool_batches must be >= 1, got {batch_size}, "
                         f"{pool_batches}")

    def cut(members: np.ndarray, _: np.ndarray) -> list[np.ndarray]:
        return [members[i : i + batch_size] for i in range(0, len(members), batch_size)]

    return _pooled_batches(np.asarray(lengths), rng, pool_batches * batch_size, cut)


def token_budget_batches(lengths: Sequence[int] | np.ndarray, max_tokens: int,
                         rng: np.random.Generator,
                         pool_batches: int = 100) -> list[np.ndarray]:
    """Shuffled index batches of at most ``max_tokens`` padded tokens, for pre-training.

    As :func:`bucketed_batches`, with pools of ``pool_batches`` batches of median-length
    molecules, each pool's sorted molecules cut as :func:`_greedy_cuts` says.
    ``max_tokens`` counts padded, unexpanded tokens.
    """
    lengths = np.asarray(lengths)
    per_batch = max(1, max_tokens // max(1, int(np.median(lengths))))
    return _pooled_batches(lengths, rng, max(1, pool_batches * per_batch),
                           lambda members, sorted_lengths: _greedy_cuts(
                               members, sorted_lengths, max_tokens))


def _pooled_batches(lengths: np.ndarray, rng: np.random.Generator, pool: int,
                    cut: Callable[[np.ndarray, np.ndarray], list[np.ndarray]]
                    ) -> list[np.ndarray]:
    """A random permutation cut into pools of ``pool`` molecules; each pool sorted by length
    (stable) and ``cut(members, their lengths)`` into batches; all batches shuffled."""
    perm = rng.permutation(len(lengths))
    batches: list[np.ndarray] = []
    for start in range(0, len(perm), pool):
        members = perm[start : start + pool]
        members = members[np.argsort(lengths[members], kind="stable")]
        batches.extend(cut(members, lengths[members]))
    return [batches[i] for i in rng.permutation(len(batches))]


def _greedy_cuts(chunk: np.ndarray, sorted_lengths: np.ndarray, max_tokens: int) -> list:
    """Cut a length-sorted chunk into batches, each as long as ``max_tokens`` allows.

    A batch from ``a`` takes molecule ``j`` while ``sorted_lengths[j] * (j - a + 1)`` (its
    padded size) stays within the budget; that product grows with ``j``, so the first
    molecule over budget is found by bisection instead of a step per molecule. A molecule
    longer than the budget gets a batch of its own.
    """
    cuts, n, a = [], len(chunk), 0
    while a < n:
        lo, hi = a + 1, n  # the batch ends at the first j in [lo, hi) over budget, else hi
        while lo < hi:
            mid = (lo + hi) // 2
            if int(sorted_lengths[mid]) * (mid - a + 1) > max_tokens:
                hi = mid
            else:
                lo = mid + 1
        cuts.append(chunk[a:lo].astype(np.int64))
        a = lo
    return cuts


class BatchStream:
    """Endless, resumable stream of pre-training batches: epoch after epoch, the same order
    on every run, since an epoch's order depends only on ``(seed, epoch)``."""

    def __init__(self, lengths: np.ndarray, max_tokens: int, seed: int) -> None:
        self.lengths, self.max_tokens, self.seed = lengths, max_tokens, seed

    def iterate(self, epoch: int = 0, position: int = 0) -> Iterator[tuple[int, int, np.ndarray]]:
        """Yield ``(epoch, position_in_epoch, indices)`` starting at a saved position."""
        while True:
            batches = token_budget_batches(self.lengths, self.max_tokens,
                                           np.random.default_rng([self.seed, epoch]))
            for pos in range(position, len(batches)):
                yield epoch, pos, batches[pos]
            epoch, position = epoch + 1, 0


def padding_share(lengths: Sequence[int] | np.ndarray, batches: Sequence[np.ndarray]) -> float:
    """Share of the padded slots ``sum(len(b) * max length in b)`` that are padding.

    Examples
    --------
    >>> padding_share([2, 4, 4, 4], [np.array([0, 1]), np.array([2, 3])])
    0.125
    """
    lengths = np.asarray(lengths)
    slots = sum(len(b) * int(lengths[b].max()) for b in batches if len(b))
    return 1.0 - float(lengths.sum()) / slots if slots else 0.0
