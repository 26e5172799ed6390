"""Load a saved estimator and predict with it: what ``exlm-chem predict`` and screening share.

One output column per target the model was fitted with: the positive-class probability
(classifier) or the predicted value (regressor); NaN rows where a SMILES is invalid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_estimator(model_dir: str | Path) -> Any:
    """The classifier or regressor saved in ``model_dir`` (its metadata says which).

    Raises
    ------
    exlm_chem.errors.CheckpointError
        The metadata is unreadable or names no known estimator.
    """
    from exlm_chem.errors import CheckpointError
    from exlm_chem.model.checkpoint_format import ESTIMATOR_FORMAT, read_metadata
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    classes = {c.__name__: c for c in (ExLMMoleculeClassifier, ExLMMoleculeRegressor)}
    meta, _ = read_metadata(Path(model_dir), ESTIMATOR_FORMAT)  # names what is wrong
    kind = meta.get("estimator")
    if kind not in classes:
        raise CheckpointError(f"{Path(model_dir) / 'metadata.json'}: estimator {kind!r} is "
                              f"none of {sorted(classes)}")
    return classes[kind].load(model_dir)


def output_names(est: Any) -> list[str]:
    """One name per output column: the target names the model was fitted with."""
    if est.task_names_:
        return list(est.task_names_)
    if not est.multitask_:  # fitted from Python with a 1-D y
        return ["probability" if hasattr(est, "classes_") else "prediction"]
    return [f"task_{i}" for i in range(est.n_tasks_)]


def feature_columns(est: Any) -> list[str]:
    """The input columns a saved model reads beside the SMILES (``features`` with
    ``"columns"``), in order; [] for most models."""
    spec = getattr(est, "feature_spec_", None)
    return [] if spec is None or "columns" not in spec.kinds else list(spec.names["columns"])


def predict_values(est: Any, X: Any) -> Any:
    """[n, n_outputs] float64: positive probabilities or values; NaN rows where invalid.

    ``X`` is a list of SMILES, or for a model with :func:`feature_columns` a DataFrame of
    the SMILES followed by those columns.
    """
    import numpy as np

    if hasattr(est, "predict_proba"):
        p = est.predict_proba(X, on_invalid="nan")
        return p if est.multitask_ else p[:, 1:]  # binary: P(classes_[1])
    values = est.predict(X, on_invalid="nan")
    return values.reshape(len(X), -1).astype(np.float64)
