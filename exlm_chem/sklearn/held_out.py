"""The estimators' held-out molecules: which rows fit holds out, and the tree weight they choose.

``fit`` draws one seed from ``random_state``. The held-out rows are whole scaffold groups
(Bemis-Murcko), in an order drawn from that seed, about ``validation_fraction`` of the
molecules: molecules whose scaffolds training never saw, as a benchmark's scaffold split
and most real use ask of a model. They pick the best epoch (the fine-tuning loop) and the
tree head's weight in the average (:func:`held_out_tree_weight`), chosen from weights that
include the trees alone and the network alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["TREE_WEIGHTS", "HeldOutSplit", "held_out_split", "held_out_tree_weight"]

#: the weights the held-out molecules choose from (``tree_weight=None``): the trees' share
TREE_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
# a held-out part over this multiple of the share asked for (one scaffold holding most of
# the molecules) is drawn at random instead
_MAX_OVERSHOOT = 2.0


def held_out_tree_weight(network: np.ndarray, trees: np.ndarray, labels: np.ndarray,
                         task: str = "regression") -> float:
    """The weight of :data:`TREE_WEIGHTS` whose average of ``network`` and ``trees``
    [n, T] scores best on ``labels`` [n, T] (NaN: missing), summed over the tasks; the
    first of equals.

    Regression: values, squared error. Classification: probabilities, log loss (clipped
    to [1e-7, 1 - 1e-7]), which reads every molecule's probability where a rank metric
    on a few dozen held-out molecules would move in steps.
    """
    known = ~np.isnan(labels)
    y = labels[known]
    errors = []
    for w in TREE_WEIGHTS:
        mixed = ((1 - w) * network + w * trees)[known]
        if task == "classification":
            p = np.clip(mixed, 1e-7, 1 - 1e-7)
            errors.append(-(y * np.log(p) + (1 - y) * np.log1p(-p)).sum())
        else:
            errors.append(np.square(mixed - y).sum())
    return TREE_WEIGHTS[int(np.argmin(errors))]


class HeldOutSplit(NamedTuple):
    """What :func:`held_out_split` draws."""

    seed: int  # the fit's seed: member seeds, the trees and ``tta`` views derive from it
    train_rows: np.ndarray  # [n - n_valid] int, sorted
    valid_rows: np.ndarray  # [n_valid] int, sorted


def held_out_split(smiles: Sequence[str], random_state: int | np.random.RandomState | None,
                   validation_fraction: float) -> HeldOutSplit:
    """The estimators' seed and held-out rows of the fit's molecules.

    Parameters
    ----------
    smiles : sequence of str
        The valid (canonical) SMILES fit trains on.
    random_state : int, RandomState or None
        As the estimators take it; one integer is drawn from it (a RandomState advances).
    validation_fraction : float
        Share held out; none when that rounds to 0 molecules or to all of them.

    Returns
    -------
    HeldOutSplit
        The seed, and the training and held-out rows: whole scaffold groups in a seeded
        order fill the training part up to ``1 - validation_fraction`` of the molecules,
        the rest is held out (:func:`~exlm_chem.data.splits.scaffold_balanced_split`).
        Where one scaffold holds so many molecules that this would hold out more than
        twice the share asked for (or none), the held-out rows are drawn at random.
    """
    from exlm_chem.data.splits import scaffold_balanced_split

    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    n_rows = len(smiles)
    n_valid = round(validation_fraction * n_rows)
    if not 0 < n_valid < n_rows:
        return HeldOutSplit(seed, np.arange(n_rows), np.zeros(0, np.int64))
    parts = scaffold_balanced_split(smiles, (1 - validation_fraction, validation_fraction, 0.0),
                                    seed=seed)
    held = np.sort(np.concatenate([parts.valid, parts.test])).astype(np.int64)
    if 0 < len(held) <= _MAX_OVERSHOOT * n_valid and len(held) < n_rows:
        return HeldOutSplit(seed, np.sort(parts.train).astype(np.int64), held)
    order = np.random.default_rng(seed).permutation(n_rows)
    return HeldOutSplit(seed, np.sort(order[n_valid:]), np.sort(order[:n_valid]))
