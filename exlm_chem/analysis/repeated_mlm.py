"""Repeated MLM's fully masked tokens and their prediction entropy (appendix E.1).

The data transform itself (repeat every token k times, mask each copy, collate) is
:mod:`exlm_chem.data.repeated_mlm`, which pre-training uses.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.repeated_mlm import RepeatedBatch

__all__ = ["FullyMaskedEntropy", "fully_masked_entropy"]


class FullyMaskedEntropy(NamedTuple):
    """Entropy restricted to fully masked tokens (appendix E.1)."""

    token_entropy: np.ndarray  # [F] per fully masked token: mean over its k copies
    mean: float  # mean of token_entropy (NaN when F = 0)
    n_fully_masked: int  # F
    n_tokens: int  # ordinary tokens of the scored samples
    all_copies_mean: float  # mean over every masked copy, partially masked tokens too


def fully_masked_entropy(model: Any, batch: RepeatedBatch, base: float = 2.0
                         ) -> FullyMaskedEntropy:
    """Prediction entropy of the fully masked tokens of a repeated batch (appendix E.1).

    A token counts only if all k of its copies are masked; its entropy is the mean of
    the k copies' entropies, ``H_token = (1/k) sum_j H[P(x_j)]``. For an MLM model
    ``P(x_j)`` is the LM distribution at copy j; for an ExLM model it is the distribution
    of the state the Viterbi alignment assigns to copy j (see
    :mod:`exlm_chem.analysis.entropy`; samples without a DAG path are skipped).

    Parameters
    ----------
    model : ExLMModel
        Matching the batch's objective, on the batch's device, in eval mode.
    batch : RepeatedBatch
    base : float
        2 for bits.

    Returns
    -------
    FullyMaskedEntropy
    """
    from exlm_chem.analysis.entropy import batch_entropies

    result = batch_entropies(model, batch.batch, base)
    tokens, copies = [], []
    n_tokens = 0
    for cm, aligned, ok in zip(batch.copy_masked, result.aligned, result.valid, strict=True):
        if not ok:
            continue
        n_tokens += cm.shape[0]
        per_copy = np.full(cm.shape, np.nan)  # [n, k]
        per_copy.ravel()[np.flatnonzero(cm.ravel())] = aligned  # masked-position order
        tokens.append(per_copy[cm.all(axis=1)].mean(axis=1))
        copies.append(aligned)
    token_entropy = np.concatenate(tokens) if tokens else np.zeros(0)
    every = np.concatenate(copies) if copies else np.zeros(0)
    return FullyMaskedEntropy(
        token_entropy=token_entropy,
        mean=float(token_entropy.mean()) if token_entropy.size else math.nan,
        n_fully_masked=int(token_entropy.size), n_tokens=n_tokens,
        all_copies_mean=float(every.mean()) if every.size else math.nan,
    )
