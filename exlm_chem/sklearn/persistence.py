"""Where the estimators' fitted state goes to and comes from.

The network is a :class:`~exlm_chem.model.molecule_model.MoleculeModel` in its one format
(:mod:`exlm_chem.model.saved_model`); here the estimator adds what fit learned beside it
(``params``, ``fitted``: targets, history, features, uncertainty) to metadata.json, and
the estimators' ``save``/``load`` and pickling call the functions here.

An ensemble's member 0 is the estimator's ``model_`` (``model.safetensors``); members
1..m-1 go beside it as ``member_<i>.safetensors`` in the same directory. The seed, the
calibration maps and the conformity scores are plain numbers in ``metadata.json``. The
tree head (:mod:`exlm_chem.model.frozen_trees`) adds its pre-trained encoder
(``tree_encoder.safetensors``) and its trees as arrays (``tree_head.safetensors``), and
the classifier's forest (``tree_forest=True``) as arrays too (``tree_forest.safetensors``;
``fitted["tree_head"]["forest"]`` says whether there is one).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import safetensors
import safetensors.numpy
from sklearn.utils.validation import check_is_fitted

from exlm_chem.data.feature_spec import FeatureSpec
from exlm_chem.device import resolve_device
from exlm_chem.errors import CheckpointError
from exlm_chem.files.output_owner import (
    TREE_ARRAYS_FILE,
    TREE_ENCODER_FILE,
    TREE_FOREST_FILE,
    member_file,
)
from exlm_chem.model.checkpoint_format import ESTIMATOR_FORMAT, METADATA_FILE, read_metadata
from exlm_chem.model.frozen_trees import DEFAULT_TREE_WEIGHT, STATES_KIND, FrozenTrees
from exlm_chem.model.saved_model import load_model, model_from_bytes, model_to_bytes, save_model
from exlm_chem.model.tree_head import BoostedHead, ForestHead, TreeHead
from exlm_chem.uncertainty.calibration import Calibrator

__all__ = ["load_estimator", "pickled_state", "read_finetuned_metadata", "save_estimator",
           "unpickled_state"]

# entries of metadata.json "fitted" that every estimator writes and load reads
_FITTED_KEYS = ("n_tasks_", "multitask_", "task_names_", "best_epoch_", "best_score_",
                "selection_metric_", "stopped_early_", "pretrained_source_",
                "fit_invalid_rows", "n_fit_rows", "history_")


def read_finetuned_metadata(path: str | os.PathLike[str], estimator: str) -> dict[str, Any]:
    """metadata.json of a directory written by :func:`save_estimator` for ``estimator``."""
    path = Path(path)
    meta, _ = read_metadata(path, ESTIMATOR_FORMAT)
    where = path / METADATA_FILE
    if meta.get("estimator") != estimator:
        raise CheckpointError(f"{path} holds a fitted {meta.get('estimator')}, not a "
                              f"{estimator}")
    for key in ("params", "fitted", "net"):
        if not isinstance(meta.get(key), dict):
            raise CheckpointError(f"{where}: {key!r} is missing or not an object")
    missing = [k for k in _FITTED_KEYS if k not in meta["fitted"]]
    if missing:
        raise CheckpointError(f"{where}: 'fitted' lacks {', '.join(missing)}")
    return meta


def _json_number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _json_param(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)  # e.g. features=["rdkit2d", "columns"]
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(
            _json_param(v), str | int | float | bool) for k, v in value.items()):
        return {k: _json_param(v) for k, v in value.items()}  # e.g. tree_params
    return None  # e.g. a RandomState: not reproducible from JSON anyway


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


def save_estimator(est: Any, path: str | os.PathLike[str]) -> Path:
    """Write a fitted estimator to a directory (atomically): its model in the model's
    format (:func:`~exlm_chem.model.saved_model.save_model`), the other ensemble members
    beside it, and what fit learned in metadata.json."""
    check_is_fitted(est, "model_")
    invalid = np.flatnonzero(est.fit_invalid_mask_)
    reasons = getattr(est, "fit_invalid_reasons_", None)  # absent in pickles of before
    fitted = {
        "n_tasks_": est.n_tasks_, "multitask_": est.multitask_,
        "task_names_": est.task_names_, "best_epoch_": est.best_epoch_,
        "best_score_": _json_number(est.best_score_),
        "selection_metric_": est.selection_metric_, "stopped_early_": est.stopped_early_,
        "pretrained_source_": est.pretrained_source_,
        "fit_invalid_rows": invalid.tolist(),
        "n_fit_rows": len(est.fit_invalid_mask_),
        "history_": [{k: _json_number(v) if isinstance(v, float) else v
                      for k, v in r._asdict().items()} for r in est.history_],
        **est._fitted_metadata(),
    }
    if reasons is not None:
        fitted["fit_invalid_reasons"] = [reasons[i] for i in invalid]
    held_out = getattr(est, "held_out_mask_", None)  # absent in pickles from before 0.2.2
    if held_out is not None:
        fitted["held_out_rows"] = np.flatnonzero(held_out).tolist()
    params = {k: _json_param(v) for k, v in est.get_params().items()}
    fitted["uncertainty"] = uncertainty_metadata(est)
    spec = getattr(est, "feature_spec_", None)
    fitted["features"] = None if spec is None else spec.to_dict()  # names and scaler
    meta = {"estimator": type(est).__name__, "params": params, "fitted": fitted}
    members = {member_file(i): model_to_bytes(model) for i, model in
               enumerate(est.models_[1:], 1)}
    trees = getattr(est, "tree_head_", None)
    fitted["tree_head"] = None if trees is None else {**tree_head_metadata(trees),
                                                      "weight": est.tree_weight_}
    if trees is not None:
        members.update(tree_head_files(trees))
    return save_model(path, est.model_, meta, members)


def tree_head_metadata(trees: FrozenTrees) -> dict[str, Any]:
    # "net": the pre-trained encoder's settings where the trees read its states, else None
    return {"net": trees.model.settings() if trees.reads_states else None,
            "features": trees.features.to_dict(), "task": trees.trees.task,
            "booster": trees.trees.booster, "forest": trees.forest is not None}


def tree_head_files(trees: FrozenTrees) -> dict[str, bytes]:
    files = {TREE_ARRAYS_FILE: safetensors.numpy.save(trees.trees.arrays())}
    if trees.reads_states:
        files[TREE_ENCODER_FILE] = model_to_bytes(trees.model)
    if trees.forest is not None:
        files[TREE_FOREST_FILE] = safetensors.numpy.save(trees.forest.arrays())
    return files


def tree_head_file_names(meta: dict[str, Any]) -> tuple[str, ...]:
    """The files the tree head of ``meta`` (:func:`tree_head_metadata`) is read from."""
    forest = (TREE_FOREST_FILE,) if _has_forest(meta) else ()
    encoder = (TREE_ENCODER_FILE,) if meta["net"] is not None else ()
    return (*encoder, TREE_ARRAYS_FILE, *forest)


def tree_head_from(meta: dict[str, Any], files: dict[str, bytes], config: Any,
                   tokenizer: Any) -> FrozenTrees:
    """Inverse of :func:`tree_head_metadata` and :func:`tree_head_files`."""
    model = None
    if meta["net"] is not None:
        model = model_from_bytes(files[TREE_ENCODER_FILE], config, tokenizer, 0, None,
                                 **meta["net"])
    arrays = safetensors.numpy.load(files[TREE_ARRAYS_FILE])
    # saves from before CatBoost (0.4.x) name no booster: histogram boosting
    booster = meta.get("booster", "hist")
    if booster not in ("catboost", "hist"):
        raise ValueError(f"the tree head's booster must be 'catboost' or 'hist', got "
                         f"{booster!r}")
    head = BoostedHead if booster == "catboost" else TreeHead
    trees = head.from_arrays(meta["task"], arrays)
    features, forest = FeatureSpec.from_dict(meta["features"]), None
    if _has_forest(meta):
        forest = ForestHead.from_arrays(safetensors.numpy.load(files[TREE_FOREST_FILE]))
        # checked here, not at the first prediction: the forest reads the scaled features
        if (forest.n_tasks, forest.n_features) != (trees.n_tasks, features.n_features):
            raise ValueError(f"the forest has {forest.n_tasks} task(s) of "
                             f"{forest.n_features} features, the head {trees.n_tasks} of "
                             f"{features.n_features}")
    return FrozenTrees(model, features, trees, forest, reads_states=model is not None)


def _has_forest(meta: dict[str, Any]) -> bool:
    """Whether the tree head of ``meta`` has a forest (saves from before forests: no)."""
    forest = meta.get("forest", False)
    if not isinstance(forest, bool):
        raise ValueError(f"the tree head's 'forest' must be true or false, got {forest!r}")
    return forest


def load_estimator(cls: type, path: str | os.PathLike[str]) -> Any:
    """The ``cls`` estimator written by :func:`save_estimator` (no unpickling)."""
    meta = read_finetuned_metadata(path, cls.__name__)
    fitted = meta["fitted"]
    try:  # every entry read here comes from a file that may have been edited
        # a refit of a loaded model repeats the model, whatever today's defaults: saves
        # from before the forest (0.2.x) were fitted without one, saves from before
        # CatBoost (0.4.x and older) with histogram boosting, whose trees read the
        # pre-trained states beside the kinds a list named
        params = {"tree_forest": False, **meta["params"]}
        if "tree_booster" not in params:
            params["tree_booster"] = "hist"
            if isinstance(params.get("tree_features"), list):
                params["tree_features"] = [STATES_KIND, *params["tree_features"]]
        est = cls(**params)
        _restore_fitted(est, fitted)
        n_members = restore_uncertainty(est, fitted.get("uncertainty"))
        features = fitted.get("features")  # absent in saves from before features
        est.feature_spec_ = None if features is None else FeatureSpec.from_dict(features)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise CheckpointError(f"{Path(path) / METADATA_FILE}: an entry is missing or "
                              f"malformed ({type(err).__name__}: {err})") from err
    if est.feature_spec_ is not None:
        differences = est.feature_spec_.installed_differences()
        if differences:  # its descriptors would be other numbers than it was fitted on
            raise CheckpointError(f"{Path(path)}: the installed RDKit cannot reproduce "
                                  f"the model's features: {'; '.join(differences)}")
    model = load_model(path, fitted["n_tasks_"], est.feature_spec_, **meta["net"])
    est.config_, est.tokenizer_ = model.config, model.tokenizer
    members = [model]
    for i in range(1, n_members):
        where = Path(path) / member_file(i)
        if not where.is_file():
            raise CheckpointError(f"{where} is missing: the ensemble has {n_members} "
                                  "members")
        members.append(model_from_bytes(where.read_bytes(), model.config, model.tokenizer,
                                        fitted["n_tasks_"], est.feature_spec_,
                                        **meta["net"]))
    device = resolve_device(est.device)
    est.models_ = [m.to(device) for m in members]
    est.model_ = est.models_[0]
    est.tree_head_, est.tree_weight_ = None, DEFAULT_TREE_WEIGHT
    if fitted.get("tree_head") is not None:  # absent in saves from before the tree head
        files = {}
        try:
            names = tree_head_file_names(fitted["tree_head"])
        except (AttributeError, ValueError) as err:
            raise CheckpointError(f"{Path(path) / METADATA_FILE}: the tree head's entry "
                                  f"is malformed ({err})") from err
        for name in names:
            where = Path(path) / name
            if not where.is_file():
                raise CheckpointError(f"{where} is missing: the model has a tree head")
            files[name] = where.read_bytes()
        try:
            est.tree_head_ = tree_head_from(fitted["tree_head"], files, model.config,
                                            model.tokenizer).to(device)
            est.tree_weight_ = float(fitted["tree_head"].get("weight", DEFAULT_TREE_WEIGHT))
        except (KeyError, TypeError, ValueError, safetensors.SafetensorError) as err:
            raise CheckpointError(f"{Path(path)}: the tree head is unusable "
                                  f"({type(err).__name__}: {err})") from err
    return est


def _restore_fitted(est: Any, fitted: dict[str, Any]) -> None:
    """The fitted attributes other than the models, from metadata.json."""
    from exlm_chem.train.epoch_loop import EpochRecord

    for name in ("n_tasks_", "multitask_", "task_names_", "best_epoch_",
                 "selection_metric_", "stopped_early_", "pretrained_source_"):
        setattr(est, name, fitted[name])
    nan = float("nan")
    est.best_score_ = nan if fitted["best_score_"] is None else fitted["best_score_"]
    est.history_ = [EpochRecord(**{k: nan if v is None else v for k, v in r.items()})
                    for r in fitted["history_"]]
    est.fit_invalid_mask_ = np.zeros(fitted["n_fit_rows"], dtype=bool)
    est.fit_invalid_mask_[fitted["fit_invalid_rows"]] = True
    if "held_out_rows" in fitted:  # absent in saves from before 0.2.2
        est.held_out_mask_ = np.zeros(fitted["n_fit_rows"], dtype=bool)
        est.held_out_mask_[fitted["held_out_rows"]] = True
    reasons = fitted.get("fit_invalid_reasons")  # absent in saves from before reasons
    est.fit_invalid_reasons_ = None if reasons is None else [None] * fitted["n_fit_rows"]
    if reasons is not None:
        for row, reason in zip(fitted["fit_invalid_rows"], reasons, strict=True):
            est.fit_invalid_reasons_[row] = str(reason)
    est._restore_metadata(fitted)


def pickled_state(state: dict[str, Any]) -> dict[str, Any]:
    """An estimator's ``__dict__`` for pickling: the models as safetensors bytes and their
    settings, not pickled torch modules."""
    model = state.pop("model_", None)
    members = state.pop("models_", [])
    trees = state.pop("tree_head_", None)
    if trees is not None:
        state["_tree_head"] = (tree_head_metadata(trees), tree_head_files(trees))
    if model is not None:
        state["_model_safetensors"] = model_to_bytes(model)
        state["_members_safetensors"] = [model_to_bytes(m) for m in members[1:]]
        state["_net_kwargs"] = model.settings()
    return state


def unpickled_state(state: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """Inverse of :func:`pickled_state`: the other attributes, and the models (CPU)."""
    state = dict(state)
    trees = state.pop("_tree_head", None)
    if trees is not None:
        state["tree_head_"] = tree_head_from(*trees, state["config_"], state["tokenizer_"])
    data, settings = state.pop("_model_safetensors", None), state.pop("_net_kwargs", None)
    others = state.pop("_members_safetensors", [])
    if data is None:
        return state, []
    spec = state.get("feature_spec_")  # absent in pickles from before features
    return state, [model_from_bytes(d, state["config_"], state["tokenizer_"], state["n_tasks_"],
                                    spec, **settings) for d in [data, *others]]
