"""Checks of the estimators' parameters, done in ``fit`` (scikit-learn's ``__init__`` only
stores them), every problem reported at once.

The uncertainty parameters are checked by :mod:`exlm_chem.uncertainty.params`, the
fine-tuning ones by :class:`~exlm_chem.presets.FinetuneSettings`, which this builds.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from exlm_chem.data.feature_spec import feature_kinds
from exlm_chem.model.catboost_fit import checked_losses
from exlm_chem.model.frozen_trees import tree_booster, tree_kinds
from exlm_chem.model.molecule_model import check_max_length
from exlm_chem.model.pooling import Pooling
from exlm_chem.presets import FinetuneSettings
from exlm_chem.sklearn.target_transform import check_target_transform
from exlm_chem.uncertainty.params import is_count, uncertainty_problems

__all__ = ["fit_settings", "tree_forest_problems"]

_FIT_POLICIES = ("raise", "drop")
# what fit sets itself: the seed, the threads, silence and no files
_FIXED_TREE_PARAMS = frozenset({"random_seed", "thread_count", "verbose",
                                "allow_writing_files"})


def fit_settings(est: Any, task: str) -> FinetuneSettings:
    """The fine-tuning settings of estimator ``est``, once all its parameters are checked.

    Parameters
    ----------
    est : ExLMMoleculeClassifier or ExLMMoleculeRegressor
        Read for its parameters and ``AUTO_FEATURES``; not changed.
    task : {"classification", "regression"}
        Its task: some parameters apply to one only.

    Returns
    -------
    FinetuneSettings
        The fields of the same names as ``est``'s parameters.

    Raises
    ------
    ValueError
        Naming every problem at once (not one per attempt), joined by ``"; "``.
    """
    problems = []
    if est.on_invalid not in _FIT_POLICIES:
        problems.append(f"on_invalid must be one of {_FIT_POLICIES} in fit (predict "
                        f"methods take on_invalid='nan'|'raise'), got {est.on_invalid!r}")
    vf = est.validation_fraction
    if not isinstance(vf, int | float) or isinstance(vf, bool) or not 0 <= vf < 1:
        problems.append(f"validation_fraction must be in [0, 1), got {vf!r}")
    if est.patience is not None and not is_count(est.patience, 1):
        problems.append(f"patience must be None or an integer >= 1, got {est.patience!r}")
    mm = est.max_minutes
    if mm is not None and (not isinstance(mm, int | float) or not mm > 0):
        problems.append(f"max_minutes must be None or > 0, got {mm!r}")
    settings = None
    try:
        settings = FinetuneSettings(**{f.name: getattr(est, f.name)
                                       for f in fields(FinetuneSettings)})
    except ValueError as err:
        problems.insert(0, str(err))
    for check, value in ((Pooling.of, est.pooling), (check_max_length, est.max_length),
                         (lambda v: feature_kinds(v, auto=est.AUTO_FEATURES), est.features),
                         (tree_kinds, est.tree_features)):
        try:
            check(value)
        except ValueError as err:
            problems.append(str(err))
    nj = est.n_jobs
    if nj is not None and (not isinstance(nj, int | np.integer) or isinstance(nj, bool)
                           or nj == 0):
        problems.append(f"n_jobs must be None or a non-zero integer, got {nj!r}")
    problems += [f"{name} must be True or False, got {getattr(est, name)!r}"
                 for name in ("tree_head", "head_first")
                 if not isinstance(getattr(est, name), bool | np.bool_)]
    problems += tree_forest_problems(est.tree_forest, est.tree_head, task)
    try:
        tree_booster(est.tree_booster, 1)
    except ValueError as err:
        problems.append(str(err))
    tp = est.tree_params
    if tp is not None and (not isinstance(tp, dict) or not all(isinstance(k, str) for k in tp)
                           or _FIXED_TREE_PARAMS & set(tp)):
        problems.append(f"tree_params must be None or a dict of CatBoost settings other "
                        f"than {sorted(_FIXED_TREE_PARAMS)}, got {tp!r}")
    elif tp and est.tree_booster == "hist":
        problems.append(f"tree_params are CatBoost's settings: set tree_booster='catboost' "
                        f"(or 'auto') or tree_params=None, got tree_params={tp!r} with "
                        f"tree_booster='hist'")
    elif tp and "loss_function" in tp:
        try:
            checked_losses(tp["loss_function"], task)
        except ValueError as err:
            problems.append(f"tree_params: {err}")
    tw = est.tree_weight
    if not (tw is None or tw == "auto" or _is_share(tw)
            or (isinstance(tw, tuple | list) and len(tw) > 0
                and all(_is_share(w) for w in tw))):
        problems.append(f"tree_weight must be 'auto', in [0, 1], a non-empty tuple of such "
                        f"weights to choose from, or None, got {tw!r}")
    if est.train_layers is not None and not is_count(est.train_layers, 1):
        problems.append(f"train_layers must be None or an integer >= 1, got "
                        f"{est.train_layers!r}")
    problems += uncertainty_problems(est, task)
    try:
        check_target_transform(est.target_transform, task)
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise ValueError("; ".join(problems))
    return settings


def _is_share(w: Any) -> bool:
    """A number in [0, 1], not a bool."""
    return isinstance(w, int | float | np.floating) and not isinstance(w, bool) and 0 <= w <= 1


def tree_forest_problems(tree_forest: Any, tree_head: Any, task: str) -> list[str]:
    """What is wrong with ``tree_forest``: a value other than None or a boolean, or True
    beside the other parameters (a regressor's, or without the tree head)."""
    switches = (bool, np.bool_)
    if tree_forest is None or (isinstance(tree_forest, switches) and not tree_forest):
        return []
    if not isinstance(tree_forest, switches):
        return [f"tree_forest must be None, True or False, got {tree_forest!r}"]
    if task != "classification":
        return ["tree_forest applies to classifiers only (a forest beside the "
                "regressor's trees was not measured); use tree_forest=None or False"]
    if isinstance(tree_head, switches) and not tree_head:
        return ["tree_forest=True needs the tree head it joins the forest to: set "
                "tree_head=True, or tree_forest=False"]
    return []
