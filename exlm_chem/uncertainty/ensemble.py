"""Ensembles over member models and SMILES views: seeds, bootstrap rows, averages, spreads.

An estimator with ``n_models=m`` and ``tta=n`` produces, per molecule and task, m x (1 + n)
outputs (member x view). Members differ in their seed (head initialisation, dropout,
batch order and, with ``bootstrap``, their training rows); views are the canonical SMILES
and n randomized ones (:func:`~exlm_chem.data.augment.tta_views`). The estimators' tree
head, when there is one, joins the average with a weight of its own (:func:`average`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from exlm_chem.uncertainty.calibration import logit

if TYPE_CHECKING:
    from exlm_chem.uncertainty.calibration import Calibrator

__all__ = ["Spread", "average", "bootstrap_rows", "classifier_logits", "combine",
           "member_seeds"]


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


def average(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float) -> np.ndarray:
    """One output [N, T] per molecule: the mean of ``samples`` [M, V, N, T] over members
    and views, averaged with the tree head's outputs ``trees`` [N, T] (None: no tree head)
    that weigh ``tree_weight``.

    Both are on the scale the outputs are averaged on (probabilities, values); without
    trees this is the mean :func:`combine` reports beside the spreads.
    """
    mean = samples.mean(axis=(0, 1))
    if trees is None:
        return mean
    return (1 - tree_weight) * mean + tree_weight * trees


def classifier_logits(samples: np.ndarray, trees: np.ndarray | None, tree_weight: float,
                      calibrator: Calibrator | None) -> np.ndarray:
    """A classifier's one output [N, T] per molecule, as logits.

    Parameters
    ----------
    samples : ndarray [M, V, N, T]
        The members' logits on each SMILES view.
    trees : ndarray [N, T] or None
        The tree head's logits (None: no tree head).
    tree_weight : float
        The trees' share of the average probability.
    calibrator : Calibrator or None
        Maps the average probability (the classifier's ``calibrate``).

    Returns
    -------
    ndarray [N, T]
        The logit of the (calibrated) :func:`average` of the probabilities; one member on
        one view, with no trees and no calibrator, its own logits unchanged (no round trip
        through a probability, which would round them).
    """
    if samples.shape[:2] == (1, 1) and calibrator is None and trees is None:
        return samples[0, 0]
    from scipy.special import expit

    proba = average(expit(samples), None if trees is None else expit(trees), tree_weight)
    if calibrator is not None:
        proba = calibrator.apply(proba)
    return logit(proba)
