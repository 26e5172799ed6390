"""Load a saved estimator and predict with it: what ``exlm-chem predict`` and screening share.

One output column per target the model was fitted with: the positive-class probability
(classifier) or the predicted value (regressor); NaN rows where a SMILES is invalid, and
the reason beside them from the estimator's one check of the call.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def saved_feature_columns(model_dir: str | Path) -> list[str]:
    """The input columns the model saved in ``model_dir`` reads beside the SMILES
    (``features`` with ``"columns"``), in order, [] for most models; read from its
    metadata alone (no weights, no torch): what ``predict`` and a screen's driver open."""
    from exlm_chem.errors import CheckpointError
    from exlm_chem.model.checkpoint_format import ESTIMATOR_FORMAT, read_metadata

    meta, _ = read_metadata(Path(model_dir), ESTIMATOR_FORMAT)  # names what is wrong
    try:
        spec = meta["fitted"].get("features")
    except (KeyError, AttributeError) as error:
        raise CheckpointError(f"{Path(model_dir) / 'metadata.json'}: not the metadata of a "
                              f"fitted estimator ({error!r})") from None
    return [] if spec is None else _user_columns(spec["kinds"], spec["names"])


def _user_columns(kinds: Any, names: dict[str, Any]) -> list[str]:
    return list(names["columns"]) if "columns" in kinds else []


#: How an error names the input columns read for a model's feature columns.
MODEL_COLUMNS = "feature columns of the model"
FEATURE_COLUMNS_OPTION = "--feature-columns"


def input_feature_columns(model_columns: Sequence[str],
                          given: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The input columns holding a model's feature columns, as ``{what: columns}`` (the
    ``required`` of :func:`exlm_chem.data.tables.open_table`, whose errors name missing
    columns by ``what``); {} for a model without feature columns.

    Parameters
    ----------
    model_columns : sequence of str
        :func:`saved_feature_columns` of the model (the names ``fit --feature-columns`` gave).
    given : sequence of str, optional
        ``--feature-columns`` of ``predict`` / ``screen``: one input column for each of
        the model's, in its order, for a library that names them otherwise. None or
        empty: the input columns carry the model's names.
    """
    given = list(given or [])
    if not given:
        return {MODEL_COLUMNS: list(model_columns)} if model_columns else {}
    if not model_columns:
        raise ValueError(f"{FEATURE_COLUMNS_OPTION} {given}: this model reads no feature "
                         "columns (it was fitted without `exlm-chem fit --feature-columns`)")
    if len(given) != len(model_columns):
        raise ValueError(f"{FEATURE_COLUMNS_OPTION} names {len(given)} column(s) {given}; "
                         f"the model reads {len(model_columns)}: {list(model_columns)} (one "
                         "input column for each, in this order)")
    return {FEATURE_COLUMNS_OPTION: given}


def predict_values(est: Any, smiles: Sequence[Any], columns: Any = None) -> Any:
    """:class:`~exlm_chem.model.molecule_model.ModelOutputs` of ``smiles``: values [n,
    n_outputs] float64, positive probabilities or predicted values, NaN rows where invalid,
    with the one check's valid mask and reasons (nothing parses the SMILES again).

    ``columns`` [n, F] (numbers, or their text as read from a file; None = missing): the
    values of the model's feature columns, in its order, for a model with them.
    """
    import numpy as np

    from exlm_chem.data.featurize import smiles_sequence

    smiles = list(smiles_sequence(smiles, "smiles"))
    spec = getattr(est, "feature_spec_", None)
    names = [] if spec is None else _user_columns(spec.kinds, spec.names)
    numbers = None
    if names:  # the model's feature columns, under its names
        import pandas as pd

        from exlm_chem.sklearn.inputs import numeric_columns

        if columns is None:
            raise ValueError(f"the model reads feature columns {names}; none were given")
        cells = np.asarray(columns, dtype=object).reshape(len(smiles), len(names))
        numbers = numeric_columns(pd.DataFrame(cells, columns=names))
    outputs = est._outputs_of(est._prepared_rows(smiles, numbers, "nan"))
    if hasattr(est, "predict_proba"):  # logits -> P(classes_[1]) per task
        from scipy.special import expit

        return outputs._replace(values=expit(outputs.values))
    return outputs
