"""Checks and conversions of the estimators' X (SMILES) and y (labels or values).

Every error names the offending rows. Label matrices come out as float32 [N, T] with
NaN where a label is missing, the form :func:`exlm_chem.train.finetune.finetune` takes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.feature_spec import USER_KIND
from exlm_chem.data.featurize import smiles_sequence

__all__ = ["Targets", "as_smiles_list", "check_feature_columns", "classification_targets",
           "default_column_names", "numeric_columns", "regression_targets",
           "smiles_and_columns", "split_X"]

_SHOWN = 10  # rows listed in an error message


class Targets(NamedTuple):
    labels: np.ndarray  # [N, T] NaN = missing; float32 (classes), float64 (regression values)
    classes: np.ndarray | None  # 1-D y: the two original label values (negative, positive)
    multitask: bool  # y was 2-D
    task_names: list[str] | None  # column names of a DataFrame y


def _rows(mask: np.ndarray) -> str:
    rows = np.flatnonzero(mask)
    more = f" and {rows.size - _SHOWN} more" if rows.size > _SHOWN else ""
    return f"{rows[:_SHOWN].tolist()}{more}"


def as_smiles_list(X: Any) -> list[Any]:
    """X as a list: a sequence of SMILES, or a 2-D array/DataFrame with one column.

    Entries are not checked here (see :func:`exlm_chem.data.featurize.check_smiles`).
    """
    smiles_sequence(X, "X")  # every entry point's one check of a bare string
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # a SciPy sparse matrix or array
        raise TypeError(f"X must be SMILES strings; sparse input ({type(X).__name__}) is "
                        "not supported")
    if hasattr(X, "columns") and hasattr(X, "iloc"):  # pandas DataFrame
        if X.shape[1] != 1:
            raise ValueError(f"X must hold one column of SMILES, got {X.shape[1]} columns; "
                             "with features='columns' the columns after the first are "
                             "per-molecule features")
        X = X.iloc[:, 0]
    if isinstance(X, np.ndarray):
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        elif X.ndim != 1:
            raise ValueError(f"X must be 1-D (or one column) of SMILES, got shape {X.shape}; "
                             "with features='columns' the columns after the first are "
                             "per-molecule features")
        return X.tolist()
    try:
        return list(X)
    except TypeError:
        raise TypeError(f"X must be a sequence of SMILES strings, got "
                        f"{type(X).__name__}") from None


def default_column_names(n: int) -> list[str]:
    """Names of the feature columns of an X without column names: its columns 1..n."""
    return [f"column_{j}" for j in range(1, n + 1)]


def smiles_and_columns(X: Any) -> tuple[list[Any], np.ndarray, list[str] | None]:
    """X with SMILES in its first column and numeric per-molecule features in the others
    (``features="columns"``): a DataFrame or a 2-D array of at least two columns.

    Returns the SMILES, the features float64 [N, F] (NaN stays NaN: a missing value) and
    the feature names (a DataFrame's column names; None for an array). A cell that is not
    a number raises, naming its row and column.
    """
    import pandas as pd

    named = hasattr(X, "columns") and hasattr(X, "iloc")
    if named:
        frame = X
    else:
        array = np.asarray(X, dtype=object)
        if array.ndim != 2:
            raise ValueError(f"with features='columns', X must be 2-D (SMILES, then feature "
                             f"columns), got shape {array.shape}")
        frame = pd.DataFrame(array, columns=["smiles", *default_column_names(array.shape[1] - 1)])
    if frame.shape[1] < 2:
        raise ValueError(f"with features='columns', X needs the SMILES column and at least "
                         f"one feature column, got {frame.shape[1]} column(s)")
    values = frame.iloc[:, 1:]
    names = [str(c) for c in values.columns] if named else None
    return frame.iloc[:, 0].tolist(), numeric_columns(values), names


def split_X(X: Any, kinds: tuple[str, ...]
            ) -> tuple[list[Any], np.ndarray | None, list[str] | None]:
    """X as (SMILES, the caller's feature columns [N, F] or None, their names or None):
    columns only for feature ``kinds`` that include the caller's (:data:`USER_KIND`)."""
    return smiles_and_columns(X) if USER_KIND in kinds else (as_smiles_list(X), None, None)


def check_feature_columns(columns: np.ndarray, names: list[str] | None,
                          fitted: list[str]) -> None:
    """A ValueError unless a prediction's feature ``columns`` [N, F] (named ``names``, or
    None) are the ``fitted`` columns a model was fitted with."""
    if columns.shape[1] != len(fitted):
        raise ValueError(f"X has {columns.shape[1]} feature columns, the model was "
                         f"fitted with {len(fitted)}: {fitted}")
    # names are compared when both sides have them (DataFrames): a swapped column
    # would otherwise be read as the other feature without a word
    if names is not None and fitted != default_column_names(len(fitted)) and names != fitted:
        raise ValueError(f"X's feature columns {names} are not the ones the model "
                         f"was fitted with: {fitted}")


def numeric_columns(values: Any) -> np.ndarray:
    """A DataFrame of feature cells (numbers, their text, or missing) as float64 [N, F];
    NaN stays NaN. A cell that is not a number raises, naming its row and column."""
    import pandas as pd

    numbers = values.apply(pd.to_numeric, errors="coerce")
    bad = np.asarray(values.notna() & numbers.isna())
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"X: feature column {str(values.columns[col])!r} holds a value that "
                         f"is not a number at row {row}: {values.iloc[row, col]!r} (rows "
                         f"{_rows(bad.any(1))})")
    return numbers.to_numpy(dtype=np.float64)


def _as_array(y: Any, n: int) -> tuple[np.ndarray, list[str] | None]:
    names = [str(c) for c in y.columns] if hasattr(y, "columns") else None
    y = np.asarray(y)
    if y.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D or 2-D, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"X has {n} SMILES but y has {y.shape[0]} rows")
    if y.ndim == 2 and y.shape[1] == 0:
        raise ValueError("y has no columns")
    return y, names


def _as_float(y: np.ndarray, what: str) -> np.ndarray:
    try:
        return y.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what} must be numeric: {err}") from None


def classification_targets(y: Any, n: int) -> Targets:
    """1-D y: exactly two label values of any type, none missing (mapped 0/1 via their
    sorted order). 2-D y: one column per task holding 0, 1 or NaN (missing)."""
    import pandas as pd

    y, names = _as_array(y, n)
    if y.ndim == 1:
        missing = np.asarray(pd.isna(y), dtype=bool)
        if missing.any():
            raise ValueError(f"1-D y has missing labels at rows {_rows(missing)}; pass a "
                             "2-D y (one column per task, NaN = missing) for partial labels")
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(f"1-D y must hold exactly two classes, got {classes.size}: "
                             f"{classes[:10].tolist()}; several labels per molecule go in a "
                             "2-D 0/1 y, one column per task")
        labels = (y == classes[1]).astype(np.float32)[:, None]  # [N, 1]
        return Targets(labels, classes, False, names)
    values = _as_float(y, "2-D y")
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        raise ValueError(f"2-D y must hold 0, 1 or NaN; other values at rows {_rows(bad.any(1))}")
    empty = np.isnan(values).all(0)
    if empty.any():
        raise ValueError(f"task column(s) {np.flatnonzero(empty).tolist()} have no label")
    return Targets(values.astype(np.float32), None, True, names)


def regression_targets(y: Any, n: int) -> Targets:
    """1-D y: finite values for every molecule. 2-D y: one column per task, NaN = missing.

    Values stay float64 (fine-tuning standardises them in float64); they must fit the
    float32 range of the network's outputs.
    """
    y, names = _as_array(y, n)
    values = _as_float(y, "y")
    if y.ndim == 1:
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(f"1-D y has missing or infinite values at rows {_rows(bad)}; "
                             "pass a 2-D y (NaN = missing) for partial labels")
        values = values[:, None]  # [N, 1]
    bad = np.isinf(values)
    if bad.any():
        raise ValueError(f"y has infinite values at rows {_rows(bad.any(1))}")
    huge = np.abs(np.nan_to_num(values)) > np.finfo(np.float32).max
    if huge.any():
        raise ValueError(f"y has values beyond the float32 range (|y| > 3.4e38) at rows "
                         f"{_rows(huge.any(1))}; rescale them")
    empty = np.isnan(values).all(0)
    if empty.any():
        raise ValueError(f"task column(s) {np.flatnonzero(empty).tolist()} have no value")
    return Targets(values, None, y.ndim == 2, names)
