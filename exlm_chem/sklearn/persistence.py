"""Where the estimators' weights come from and go to.

* :func:`save_finetuned` / :func:`load_finetuned`: a fitted estimator as a directory of
  config.json, model.safetensors (encoder and head), vocab.txt and metadata.json,
  written atomically and read back without unpickling.
* :func:`net_to_bytes` / :func:`net_from_bytes`: the same weights as safetensors bytes,
  for pickling.
* :class:`PersistenceMixin`: the estimators' ``save``/``load`` and pickling on top of these.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Self

import numpy as np
import safetensors.torch
import torch
from sklearn.utils.validation import check_is_fitted

from exlm_chem.data.descriptors import FeatureSpec
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.device import resolve_device
from exlm_chem.errors import CheckpointError
from exlm_chem.files.safe_write import atomic_directory
from exlm_chem.model.checkpoint_format import (
    ESTIMATOR_FORMAT,
    FORMAT_VERSION,
    METADATA_FILE,
    check_tensors,
    read_metadata,
    read_parts,
    stamp,
    validate,
)
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.rope_layout import to_current_layout
from exlm_chem.train.finetune_net import FinetuneNet, build_finetune_net
from exlm_chem.uncertainty.state import member_file, restore_uncertainty, uncertainty_metadata

__all__ = ["PersistenceMixin", "load_finetuned", "net_from_bytes", "net_to_bytes",
           "save_finetuned"]

# entries of metadata.json "fitted" that every estimator writes and load reads
_FITTED_KEYS = ("n_tasks_", "multitask_", "task_names_", "best_epoch_", "best_score_",
                "selection_metric_", "stopped_early_", "pretrained_source_",
                "fit_invalid_rows", "n_fit_rows", "history_")


def net_to_bytes(net: FinetuneNet) -> bytes:
    """The network's weights (encoder and head) as safetensors bytes."""
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    return safetensors.torch.save(state, metadata={"format": ESTIMATOR_FORMAT,
                                                   "format_version": str(FORMAT_VERSION)})


def _safetensors_metadata(data: bytes) -> dict[str, str]:
    """The ``__metadata__`` of safetensors bytes: an 8-byte little-endian header length,
    then the JSON header."""
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + size]).get("__metadata__") or {}


def _build_net(config: ExLMConfig, tokenizer: SmilesTokenizer, n_out: int, where: str,
               **net_kwargs: Any) -> FinetuneNet:
    with torch.random.fork_rng(devices=[]):  # the throw-away init must not touch the caller's RNG
        try:
            return build_finetune_net(config, tokenizer, n_out, **net_kwargs)
        except (TypeError, ValueError) as err:
            raise CheckpointError(f"{where}: the saved network settings {net_kwargs} or "
                                  f"n_out={n_out!r} are unusable: {err}") from err


def net_from_bytes(data: bytes, config: ExLMConfig, tokenizer: SmilesTokenizer, n_out: int,
                   **net_kwargs: Any) -> FinetuneNet:
    """Inverse of :func:`net_to_bytes` (on the CPU, in eval mode)."""
    tensors = safetensors.torch.load(data)
    net = _build_net(config, tokenizer, n_out, "pickled weights", **net_kwargs)
    check_tensors("pickled weights", tensors, net.state_dict())
    # pickles carry no metadata.json: their version (absent before 3) is in the header
    version = _safetensors_metadata(data).get("format_version")
    tensors = to_current_layout(tensors, config, None if version is None else int(version))
    net.load_state_dict(tensors)
    return net.eval()


def save_finetuned(path: str | os.PathLike[str], net: FinetuneNet, config: ExLMConfig,
                   metadata: dict[str, Any], extra_files: dict[str, bytes] | None = None
                   ) -> Path:
    """Write a fitted network atomically; ``metadata`` must be JSON-serialisable.

    ``extra_files`` (name -> bytes, e.g. an ensemble's other members) go in the same
    directory, inside the same atomic write.

    An existing ``path`` is replaced only when it holds a fitted estimator saved here
    (see :func:`exlm_chem.files.safe_write.atomic_directory`).
    """
    from exlm_chem import __version__

    meta, header = stamp({"package_version": __version__, **metadata}, config,
                         net.tokenizer.tokens, ESTIMATOR_FORMAT)
    text = json.dumps(meta, indent=2) + "\n"  # fail before touching the disk
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    with atomic_directory(path, kind=ESTIMATOR_FORMAT) as tmp:
        (tmp / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n",
                                         encoding="utf-8")
        safetensors.torch.save_file(state, str(tmp / "model.safetensors"), metadata=header)
        net.tokenizer.save_vocabulary(tmp / "vocab.txt")
        for name, data in (extra_files or {}).items():
            (tmp / name).write_bytes(data)
        (tmp / "metadata.json").write_text(text, encoding="utf-8")
    return Path(path)


def read_finetuned_metadata(path: str | os.PathLike[str], estimator: str) -> dict[str, Any]:
    """metadata.json of a directory written by :func:`save_finetuned` for ``estimator``."""
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


def load_finetuned(path: str | os.PathLike[str], n_out: int,
                   **net_kwargs: Any) -> tuple[FinetuneNet, ExLMConfig]:
    """The network and config saved by :func:`save_finetuned` (CPU, eval mode), validated
    like a pre-trained checkpoint (:mod:`exlm_chem.model.checkpoint_format`)."""
    parts = read_parts(path, ESTIMATOR_FORMAT)
    tokenizer = SmilesTokenizer.from_file(parts.directory / "vocab.txt")
    net = _build_net(parts.config, tokenizer, n_out, str(parts.directory / METADATA_FILE),
                     **net_kwargs)
    validate(parts, net.state_dict())
    net.load_state_dict(parts.tensors)
    return net.eval(), parts.config



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
    return None  # e.g. a RandomState: not reproducible from JSON anyway


class PersistenceMixin:
    """``save``/``load`` and pickling for the estimators; weights travel as safetensors.

    The host class provides the fitted attributes set by ``fit`` and the hooks
    ``_fitted_metadata``/``_restore_metadata`` for its own (e.g. ``classes_``).
    """

    def _net_kwargs(self) -> dict[str, Any]:
        net = self.model_
        return {"pooler_dropout": net.head.dropout.p, "pooling": net.pooling,
                "max_length": net.max_length, "n_features": net.n_features}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the fitted estimator to a directory (atomically): config.json,
        model.safetensors (encoder and head), vocab.txt, metadata.json."""
        check_is_fitted(self, "model_")
        fitted = {
            "n_tasks_": self.n_tasks_, "multitask_": self.multitask_,
            "task_names_": self.task_names_, "best_epoch_": self.best_epoch_,
            "best_score_": _json_number(self.best_score_),
            "selection_metric_": self.selection_metric_, "stopped_early_": self.stopped_early_,
            "pretrained_source_": self.pretrained_source_,
            "fit_invalid_rows": np.flatnonzero(self.fit_invalid_mask_).tolist(),
            "n_fit_rows": len(self.fit_invalid_mask_),
            "history_": [{k: _json_number(v) if isinstance(v, float) else v
                          for k, v in r._asdict().items()} for r in self.history_],
            **self._fitted_metadata(),
        }
        params = {k: _json_param(v) for k, v in self.get_params().items()}
        fitted["uncertainty"] = uncertainty_metadata(self)
        spec = getattr(self, "feature_spec_", None)
        fitted["features"] = None if spec is None else spec.to_dict()  # names and scaler
        meta = {"estimator": type(self).__name__, "params": params, "fitted": fitted,
                "net": self._net_kwargs()}
        members = {member_file(i): net_to_bytes(net) for i, net in
                   enumerate(self.models_[1:], 1)}
        return save_finetuned(path, self.model_, self.config_, meta, members)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Restore an estimator written by :meth:`save` (no unpickling).

        Raises :class:`~exlm_chem.errors.CheckpointError` naming the file for anything
        missing, corrupt or inconsistent, and when ``path`` holds another kind of model.
        """
        meta = read_finetuned_metadata(path, cls.__name__)
        fitted = meta["fitted"]
        try:  # every entry read here comes from a file that may have been edited
            est = cls(**meta["params"])
            est._restore_fitted(fitted)
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
        net, config = load_finetuned(path, fitted["n_tasks_"], **meta["net"])
        est.config_, est.tokenizer_ = config, net.tokenizer
        members = [net]
        for i in range(1, n_members):
            where = Path(path) / member_file(i)
            if not where.is_file():
                raise CheckpointError(f"{where} is missing: the ensemble has {n_members} "
                                      "members")
            members.append(net_from_bytes(where.read_bytes(), config, net.tokenizer,
                                          fitted["n_tasks_"], **meta["net"]))
        device = resolve_device(est.device)
        est.models_ = [m.to(device) for m in members]
        est.model_ = est.models_[0]
        return est

    def _restore_fitted(self, fitted: dict[str, Any]) -> None:
        """The fitted attributes other than the network, from metadata.json."""
        from exlm_chem.train.epoch_loop import EpochRecord

        for name in ("n_tasks_", "multitask_", "task_names_", "best_epoch_",
                     "selection_metric_", "stopped_early_", "pretrained_source_"):
            setattr(self, name, fitted[name])
        nan = float("nan")
        self.best_score_ = nan if fitted["best_score_"] is None else fitted["best_score_"]
        self.history_ = [EpochRecord(**{k: nan if v is None else v for k, v in r.items()})
                         for r in fitted["history_"]]
        self.fit_invalid_mask_ = np.zeros(fitted["n_fit_rows"], dtype=bool)
        self.fit_invalid_mask_[fitted["fit_invalid_rows"]] = True
        self._restore_metadata(fitted)

    def __getstate__(self) -> dict[str, Any]:
        # a copy: object.__getstate__ may hand back the live __dict__
        state = dict(super().__getstate__())
        net = state.pop("model_", None)
        members = state.pop("models_", [])
        if net is not None:  # weights as safetensors bytes, not a pickled torch module
            state["_model_safetensors"] = net_to_bytes(net)
            state["_members_safetensors"] = [net_to_bytes(m) for m in members[1:]]
            state["_net_kwargs"] = self._net_kwargs()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        data, kwargs = state.pop("_model_safetensors", None), state.pop("_net_kwargs", None)
        others = state.pop("_members_safetensors", [])
        super().__setstate__(state)
        if data is not None:
            device = resolve_device(self.device)
            self.models_ = [net_from_bytes(d, self.config_, self.tokenizer_, self.n_tasks_,
                                           **kwargs).to(device) for d in [data, *others]]
            self.model_ = self.models_[0]
