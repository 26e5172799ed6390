"""Bounded memory in CPU fine-tuning: a batch runs as micro-batches of at most so many tokens.

Saved activations grow with the real tokens of a step, not with the batch size alone, so
a batch of the paper's size made of long molecules can need more memory than a laptop
has. Splitting the batch into micro-batches of at most :data:`STEP_TOKENS` real tokens and
summing their gradients before the update keeps the optimiser step the same (the loss is
the mean over the whole batch's labelled entries) while memory follows the budget.

Shapes: B molecules in a batch.
"""

from __future__ import annotations

import numpy as np

__all__ = ["STEP_TOKENS", "micro_batches"]

#: Real (expanded) tokens per forward/backward pass in CPU fine-tuning.
STEP_TOKENS = 2048


def micro_batches(idx: np.ndarray, lengths: np.ndarray,
                  max_tokens: int | None = STEP_TOKENS) -> list[np.ndarray]:
    """Consecutive pieces of the batch ``idx`` [B] of at most ``max_tokens`` real tokens
    (``lengths`` indexed by ``idx``); a molecule longer than the budget is a piece of its
    own. None: the batch in one piece.

    Examples
    --------
    >>> [p.tolist() for p in micro_batches(np.array([3, 0, 2]), np.array([5, 9, 4, 7]), 12)]
    [[3, 0], [2]]
    """
    if max_tokens is None or int(lengths[idx].sum()) <= max_tokens:
        return [idx]
    pieces, start, total = [], 0, 0
    for i, n in enumerate(lengths[idx].tolist()):
        if i > start and total + n > max_tokens:
            pieces.append(idx[start:i])
            start, total = i, 0
        total += n
    pieces.append(idx[start:])
    return pieces
