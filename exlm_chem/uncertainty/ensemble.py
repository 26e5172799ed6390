"""Ensembles over member models and SMILES views, as uncertainty sees them: seeds,
bootstrap rows, the mean and the spreads.

An estimator with ``n_models=m`` and ``tta=n`` produces, per molecule and task, m x (1 + n)
outputs (member x view). Members differ in their seed (head initialisation, dropout,
batch order and, with ``bootstrap``, their training rows); views are the canonical SMILES
and n randomized ones (:func:`~exlm_chem.data.augment.tta_views`). How the estimators
average them with their tree head into one prediction is
:mod:`exlm_chem.sklearn.ensemble`'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Spread", "bootstrap_rows", "combine", "member_seeds"]


class Spread(NamedTuple):
    """Per-molecule uncertainty, each [N] (single task) or [N, T]; NaN rows = invalid.

    Standard deviations (ddof 0) of probabilities (classification) or values (regression).
    """

    members: np.ndarray  # across members, of each member's mean over views
    tta: np.ndarray  # across SMILES views, of each view's mean over members
    total: np.ndarray  # across all member x view outputs


def member_seeds(seed: int, n_models: int) -> list[int]:
    """Seeds of the members: the first is ``seed`` itself (so ``n_models=1`` is the plain
    model), the others are drawn from a generator seeded by it."""
    extra = np.random.default_rng([seed, n_models]).integers(0, np.iinfo(np.int32).max,
                                                              n_models - 1)
    return [int(seed), *(int(s) for s in extra)]


def bootstrap_rows(n: int, seed: int) -> np.ndarray:
    """``n`` row indices drawn with replacement, sorted (a member's bootstrap sample)."""
    return np.sort(np.random.default_rng([seed, n]).integers(0, n, n))


def combine(samples: np.ndarray) -> tuple[np.ndarray, Spread]:
    """Mean [N, T] and :class:`Spread` (each [N, T]) of ``samples`` [M, V, N, T]."""
    if samples.ndim != 4:
        raise ValueError(f"samples must be [members, views, N, T], got {samples.shape}")
    mean = samples.mean(axis=(0, 1))
    spread = Spread(members=samples.mean(axis=1).std(axis=0),
                    tta=samples.mean(axis=0).std(axis=0),
                    total=samples.reshape(-1, *samples.shape[2:]).std(axis=0))
    return mean, spread
