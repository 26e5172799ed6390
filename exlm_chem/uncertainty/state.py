"""What a fitted estimator's uncertainty parts look like on disk and in a pickle.

Member 0 is the estimator's ``model_`` and is saved as before (``model.safetensors``);
members 1..m-1 go beside it as ``member_<i>.safetensors`` in the same directory. The seed,
the calibration maps and the conformity scores are plain numbers in ``metadata.json``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exlm_chem.uncertainty.calibration import Calibrator

__all__ = ["member_file", "restore_uncertainty", "uncertainty_metadata"]


def member_file(i: int) -> str:
    return f"member_{i}.safetensors"


def uncertainty_metadata(est: Any) -> dict[str, Any]:
    """The JSON entry ``fitted["uncertainty"]`` of a fitted estimator."""
    calibrator = getattr(est, "calibrator_", None)
    scores = getattr(est, "conformity_scores_", None)
    return {
        "seed": int(est.seed_),
        "n_members": len(est.models_),
        "calibrator": None if calibrator is None else calibrator.to_dict(),
        "conformity_scores": None if scores is None else [s.tolist() for s in scores],
    }


def restore_uncertainty(est: Any, data: dict[str, Any] | None) -> int:
    """Set ``seed_``, ``calibrator_``, ``conformity_scores_`` from :func:`uncertainty_metadata`
    (None: a save from before ensembles, one member, seed 0); returns the member count."""
    data = data or {"seed": 0, "n_members": 1, "calibrator": None, "conformity_scores": None}
    est.seed_ = int(data["seed"])
    cal, scores = data["calibrator"], data["conformity_scores"]
    est.calibrator_ = None if cal is None else Calibrator.from_dict(cal)
    est.conformity_scores_ = (None if scores is None else
                              [np.asarray(s, dtype=np.float64) for s in scores])
    n_members = int(data["n_members"])
    if n_members < 1:
        raise ValueError(f"n_members must be >= 1, got {n_members}")
    return n_members
