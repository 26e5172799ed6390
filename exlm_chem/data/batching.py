"""Length-bucketed batches: the one batching path of embedding, prediction and fine-tuning.

A batch is padded to its longest molecule, so a batch of random molecules is mostly
padding (random batches of 128 BBBP molecules: 68% of the slots). Inference takes the
molecules in length order (:func:`sorted_batches`); training cannot, since the order of
a sorted pass never changes, so it shuffles, sorts within pools of many batches and
shuffles the batches (:func:`bucketed_batches`). Either way every index appears exactly
once and a batch holds molecules of similar length.

Shapes: N molecules.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_PADDING", "POOL_BATCHES", "bucketed_batches", "padding_share", "sorted_batches"]

#: Inference batches end before their padding would exceed this share of their slots.
MAX_PADDING = 0.15

#: Training pools hold this many batches: large enough that a pool's sorted molecules
#: cut into batches of similar length (BBBP, 80% of it, batches of 32: 8-10% padding,
#: against 57% for random batches), small enough that batches still mix across epochs.
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
    lengths = np.asarray(lengths)
    perm = rng.permutation(len(lengths))
    pool = pool_batches * batch_size
    batches = []
    for start in range(0, len(perm), pool):
        members = perm[start : start + pool]
        members = members[np.argsort(lengths[members], kind="stable")]
        batches.extend(members[i : i + batch_size] for i in range(0, len(members), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


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
