"""The estimators' outputs over ensemble members and SMILES views, and their spread.

:class:`UncertaintyMixin` sits in :class:`~exlm_chem.sklearn.base.ExLMEstimatorBase`;
the host provides ``_valid_rows`` (input checks), ``_net`` (a network on the estimator's
device) and the fitted ``model_`` / ``models_``, ``seed_``, ``n_tasks_``, ``multitask_``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from sklearn.utils.validation import check_is_fitted

from exlm_chem.data.augment import tta_views
from exlm_chem.uncertainty.calibration import fit_calibrator, logit
from exlm_chem.uncertainty.conformal import conformal_quantile, conformity_scores
from exlm_chem.uncertainty.ensemble import Spread, combine

__all__ = ["ClassifierUncertainty", "Interval", "RegressorUncertainty", "UncertaintyMixin"]


class UncertaintyMixin:
    """``predict_uncertainty`` and the member x view outputs behind every prediction."""

    def _fit_held_out(self, smiles: list[str], labels: np.ndarray,
                      features: np.ndarray | None = None) -> None:
        """Fit what needs held-out rows (calibration, conformal scores); see subclasses."""

    def _samples(self, smiles: list[str], features: np.ndarray | None = None) -> np.ndarray:
        """Raw outputs [members, views, n, n_tasks] float64 of valid SMILES: every member
        on the given SMILES, or with ``tta`` on the canonical + ``tta`` randomized views.
        ``features`` [n, F] are the molecules' scaled features, the same for every view."""
        from exlm_chem.train.finetune_net import predict_batched

        tta = self.tta
        if isinstance(tta, bool) or not isinstance(tta, int | np.integer) or tta < 0:
            raise ValueError(f"tta must be an integer >= 0, got {tta!r}")
        views = tta_views(smiles, int(tta), getattr(self, "seed_", 0)) if tta else [smiles]
        nets = [self._net(net) for net in getattr(self, "models_", [self.model_])]
        # one view at a time: memory stays that of a plain prediction
        out = [[predict_batched(net, view, 2 * self.batch_size, features=features)
                for view in views] for net in nets]
        return np.asarray(out, dtype=np.float64).reshape(len(nets), len(views), len(smiles),
                                                         self.n_tasks_)

    def _aggregate(self, samples: np.ndarray) -> np.ndarray:
        """One output [n, n_tasks] per molecule from ``samples`` [M, V, n, n_tasks]."""
        return samples.mean(axis=(0, 1))

    def _spread_scale(self, samples: np.ndarray) -> np.ndarray:
        """Samples on the scale their spread is reported in (probabilities, values)."""
        return samples

    def predict_uncertainty(self, X: Any, on_invalid: str = "nan") -> Spread:
        """Per-molecule spread: across members, across SMILES views (``tta``), and of all
        member x view outputs; standard deviations of probabilities (classifier) or values
        (regressor). Each is [N] (1-D ``y``) or [N, n_tasks]; NaN rows for bad SMILES.

        Needs ``n_models > 1`` or ``tta > 0``: a single output has no spread. A source
        with one sample (one member, or no ``tta``) contributes zeros.
        """
        check_is_fitted(self, "model_")
        if len(getattr(self, "models_", [None])) == 1 and not self.tta:
            raise ValueError("predict_uncertainty needs an ensemble (fit with n_models > 1) "
                             "or test-time augmentation (tta > 0)")
        valid = self._valid_rows(X, on_invalid)
        _, spread = combine(self._spread_scale(self._samples(valid.smiles, valid.features)))
        parts = []
        for values in spread:
            full = np.full((valid.n, self.n_tasks_), np.nan)
            full[valid.rows] = values
            parts.append(full if self.multitask_ else full[:, 0])
        return Spread(*parts)


class ClassifierUncertainty:
    """Probabilities averaged over members x views, and their calibration."""

    def _aggregate(self, samples: np.ndarray) -> np.ndarray:
        """Logits [n, T]: the network's own for one member and view, else the logit of the
        mean probability over members x views, calibrated when ``calibrator_`` is set."""
        calibrator = getattr(self, "calibrator_", None)  # absent in pre-ensemble pickles
        if samples.shape[:2] == (1, 1) and calibrator is None:
            return samples[0, 0]
        proba = self._spread_scale(samples).mean(axis=(0, 1))  # [n, T]
        if calibrator is not None:
            proba = calibrator.apply(proba)
        return logit(proba)

    def _spread_scale(self, samples: np.ndarray) -> np.ndarray:
        """Probabilities of the member x view logits."""
        from scipy.special import expit

        return expit(samples)

    def _fit_held_out(self, smiles: list[str], labels: np.ndarray,
                      features: np.ndarray | None = None) -> None:
        if self.calibrate is None:
            return
        proba = self._spread_scale(self._samples(smiles, features)).mean(axis=(0, 1))  # [n, T]
        self.calibrator_ = fit_calibrator(self.calibrate, labels, proba)


class Interval(NamedTuple):
    """Prediction interval bounds, each shaped like ``predict``'s output."""

    lower: np.ndarray
    upper: np.ndarray


class RegressorUncertainty:
    """Split-conformal intervals around the regressor's (ensemble) prediction."""

    def _fit_held_out(self, smiles: list[str], labels: np.ndarray,
                      features: np.ndarray | None = None) -> None:
        values = self._aggregate(self._samples(smiles, features))  # [n, T]
        self.conformity_scores_ = conformity_scores(labels, values)

    def predict_interval(self, X: Any, alpha: float = 0.1,
                         on_invalid: str = "nan") -> Interval:
        """Split-conformal interval ``predict(X) ± q`` with coverage ``>= 1 - alpha``.

        ``q`` (per task) is the finite-sample corrected quantile of the absolute residuals
        on the validation molecules (:mod:`exlm_chem.uncertainty.conformal`), computed in
        ``fit`` with the ``tta`` of that time; too few of them for ``alpha`` give unbounded
        intervals. NaN rows for bad SMILES.
        """
        check_is_fitted(self, "model_")
        if self.conformity_scores_ is None:
            raise ValueError("predict_interval needs validation molecules: fit with "
                             "validation_fraction > 0")
        q = np.array([conformal_quantile(s, alpha) for s in self.conformity_scores_])  # [T]
        pred = self.predict(X, on_invalid)
        half = q if self.multitask_ else q[0]
        return Interval(pred - half, pred + half)

