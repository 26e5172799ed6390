"""The estimators' held-out molecules: which rows fit holds out, and the tree weight they choose.

``fit`` draws one seed from ``random_state`` and a permutation from it; the first
``validation_fraction`` of the rows are held out. They pick the best epoch (the fine-tuning
loop), the regressor's tree weight (:func:`held_out_tree_weight`), the classifier's
calibration and the regressor's conformity scores (the estimator's ``_fit_held_out``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["TREE_WEIGHTS", "HeldOutSplit", "held_out_split", "held_out_tree_weight"]

#: the weights the regressor's held-out molecules choose from (``tree_weight=None``)
TREE_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def held_out_tree_weight(network: np.ndarray, trees: np.ndarray, labels: np.ndarray) -> float:
    """The weight of :data:`TREE_WEIGHTS` whose average of ``network`` and ``trees``
    values [n, T] has the lowest squared error on ``labels`` [n, T] (NaN: missing), summed
    over the tasks; the first of equals."""
    known = ~np.isnan(labels)
    errors = [np.square((1 - w) * network + w * trees - labels)[known].sum()
              for w in TREE_WEIGHTS]
    return TREE_WEIGHTS[int(np.argmin(errors))]


class HeldOutSplit(NamedTuple):
    """What :func:`held_out_split` draws."""

    seed: int  # the fit's seed: member seeds, the trees and ``tta`` views derive from it
    train_rows: np.ndarray  # [n - n_valid] int, in the drawn order
    valid_rows: np.ndarray  # [n_valid] int, in the drawn order


def held_out_split(n_rows: int, random_state: int | np.random.RandomState | None,
                   validation_fraction: float) -> HeldOutSplit:
    """The estimators' seed and held-out rows of ``n_rows`` fit molecules.

    Parameters
    ----------
    n_rows : int
        Valid molecules fit trains on.
    random_state : int, RandomState or None
        As the estimators take it; one integer is drawn from it (a RandomState advances).
    validation_fraction : float
        Share held out, rounded to whole rows; none when that rounds to 0 or to all.

    Returns
    -------
    HeldOutSplit
        The seed and the training and held-out rows of a random permutation seeded by it.
    """
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    order = np.random.default_rng(seed).permutation(n_rows)
    n_valid = round(validation_fraction * n_rows)
    n_valid = n_valid if 0 < n_valid < n_rows else 0
    return HeldOutSplit(seed, order[n_valid:], order[:n_valid])
