"""A fitted :class:`~exlm_chem.model.molecule_model.MoleculeModel` on disk and in bytes.

One format: a directory of config.json, model.safetensors (encoder and head), vocab.txt
and metadata.json, written atomically, read without unpickling and validated (older
format versions converted) as a pre-trained checkpoint is (:mod:`~exlm_chem.model.
checkpoint_format`); the model's settings are metadata's ``net``, its feature transform
is saved by its owner and passed back in. Safetensors bytes carry the same weights for
pickles and ensemble members.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import safetensors.torch
import torch

from exlm_chem.data.feature_spec import FeatureSpec
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.errors import CheckpointError
from exlm_chem.files.safe_write import atomic_directory
from exlm_chem.model.checkpoint_format import (
    ESTIMATOR_FORMAT,
    FORMAT_VERSION,
    METADATA_FILE,
    check_tensors,
    read_parts,
    stamp,
    validate,
)
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.molecule_model import MoleculeModel, build_model
from exlm_chem.model.rope_layout import to_current_layout

__all__ = ["load_model", "model_from_bytes", "model_to_bytes", "save_model"]


def model_to_bytes(model: MoleculeModel) -> bytes:
    """The model's weights (encoder and head) as safetensors bytes."""
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    return safetensors.torch.save(state, metadata={"format": ESTIMATOR_FORMAT,
                                                   "format_version": str(FORMAT_VERSION)})


def _build(config: ExLMConfig, tokenizer: Any, n_out: int, where: str,
           feature_transform: FeatureSpec | None, settings: dict[str, Any]) -> MoleculeModel:
    with torch.random.fork_rng(devices=[]):  # the throw-away init must not touch the caller's RNG
        try:
            return build_model(config, tokenizer, n_out, feature_transform=feature_transform,
                               **settings)
        except (TypeError, ValueError) as err:
            raise CheckpointError(f"{where}: the saved network settings {settings} or "
                                  f"n_out={n_out!r} are unusable: {err}") from err


def model_from_bytes(data: bytes, config: ExLMConfig, tokenizer: Any, n_out: int,
                     feature_transform: FeatureSpec | None = None,
                     **settings: Any) -> MoleculeModel:
    """Inverse of :func:`model_to_bytes` (on the CPU, in eval mode)."""
    tensors = safetensors.torch.load(data)
    model = _build(config, tokenizer, n_out, "pickled weights", feature_transform, settings)
    check_tensors("pickled weights", tensors, model.state_dict())
    # pickles carry no metadata.json: their version (absent before 3) is in the header's
    # __metadata__ (safetensors bytes: an 8-byte little-endian header length, then the JSON)
    size = int.from_bytes(data[:8], "little")
    version = (json.loads(data[8 : 8 + size]).get("__metadata__") or {}).get("format_version")
    tensors = to_current_layout(tensors, config, None if version is None else int(version))
    model.load_state_dict(tensors)
    return model.eval()


def save_model(path: str | os.PathLike[str], model: MoleculeModel, metadata: dict[str, Any],
               extra_files: dict[str, bytes] | None = None) -> Path:
    """Write a fitted model atomically; ``metadata`` must be JSON-serialisable and gets
    the model's settings as ``net``.

    ``extra_files`` (name -> bytes, e.g. an ensemble's other members) go in the same
    directory, inside the same atomic write. An existing ``path`` is replaced only when it
    holds a fitted model saved here (see :func:`exlm_chem.files.safe_write.atomic_directory`).
    """
    from exlm_chem import __version__

    meta, header = stamp({"package_version": __version__, **metadata, "net": model.settings()},
                         model.config, model.tokenizer.tokens, ESTIMATOR_FORMAT)
    text = json.dumps(meta, indent=2) + "\n"  # fail before touching the disk
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    with atomic_directory(path, kind=ESTIMATOR_FORMAT) as tmp:
        (tmp / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2) + "\n",
                                         encoding="utf-8")
        safetensors.torch.save_file(state, str(tmp / "model.safetensors"), metadata=header)
        model.tokenizer.save_vocabulary(tmp / "vocab.txt")
        for name, data in (extra_files or {}).items():
            (tmp / name).write_bytes(data)
        (tmp / METADATA_FILE).write_text(text, encoding="utf-8")
    return Path(path)


def load_model(path: str | os.PathLike[str], n_out: int,
               feature_transform: FeatureSpec | None = None,
               **settings: Any) -> MoleculeModel:
    """The model saved by :func:`save_model` (CPU, eval mode); ``settings``: the metadata's
    ``net`` entry."""
    parts = read_parts(path, ESTIMATOR_FORMAT)
    tokenizer = SmilesTokenizer.from_file(parts.directory / "vocab.txt")
    model = _build(parts.config, tokenizer, n_out, str(parts.directory / METADATA_FILE),
                   feature_transform, settings)
    validate(parts, model.state_dict())
    model.load_state_dict(parts.tensors)
    return model.eval()
