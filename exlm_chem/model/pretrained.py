"""The pre-trained encoder to start from: a checkpoint directory, the shipped default, or
a random preset.

``"default"`` means ``$EXLM_CHEM_MODEL`` when set, else the checkpoint shipped in a source
checkout (``models/exlm-small``). Fine-tuning, embedding and the analyses all start here.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import NamedTuple

import torch

from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.errors import CheckpointError
from exlm_chem.files.output_owner import saved_metadata
from exlm_chem.model.checkpoint import load_checkpoint
from exlm_chem.model.checkpoint_format import ESTIMATOR_FORMAT
from exlm_chem.model.config import ExLMConfig

__all__ = ["MODEL_ENV", "Backbone", "checkpoint_dir", "default_model_dir", "load_backbone",
           "resolve_pretrained"]

MODEL_ENV = "EXLM_CHEM_MODEL"


class Backbone(NamedTuple):
    config: ExLMConfig  # with the fine-tuning dropout applied
    tokenizer: SmilesTokenizer
    encoder_state: dict[str, torch.Tensor] | None  # None: random initialisation
    source: str  # checkpoint path, or "random:<preset>"


def default_model_dir() -> Path:
    """The shipped checkpoint's place in a source checkout: ``<repo>/models/exlm-small``."""
    import exlm_chem

    return Path(exlm_chem.__file__).resolve().parents[1] / "models" / "exlm-small"


def resolve_pretrained(pretrained: str | os.PathLike[str]) -> Path:
    """The checkpoint directory meant by ``pretrained`` (``"default"`` or a path).

    ``"default"`` is ``$EXLM_CHEM_MODEL`` when set, else :func:`default_model_dir`.
    """
    if isinstance(pretrained, str) and pretrained == "default":
        env = os.environ.get(MODEL_ENV)
        path = Path(env).expanduser() if env else default_model_dir()
        if not (path / "config.json").is_file():
            where = f"${MODEL_ENV}={env}" if env else f"{path} (the shipped default)"
            raise FileNotFoundError(
                f"no pre-trained ExLM checkpoint at {where}. Put a checkpoint directory "
                f"(config.json, model.safetensors, vocab.txt, metadata.json; e.g. the "
                f"'checkpoint' folder written by `exlm-chem pretrain`) at {default_model_dir()} "
                f"or point ${MODEL_ENV} at one, pass pretrained=<directory>, or pass "
                "pretrained=None to fine-tune a randomly initialised model.")
        return path
    path = Path(pretrained).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"pretrained={str(pretrained)!r} is not a directory")
    return path


def checkpoint_dir(path: str | os.PathLike[str] = "default") -> Path:
    """The checkpoint directory meant by ``path``: ``"default"`` (see
    :func:`resolve_pretrained`) or a directory."""
    if isinstance(path, str) and path == "default":
        return resolve_pretrained(path)
    # load_checkpoint names the missing files of an incomplete directory
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"model {str(path)!r} is not a directory; pass an "
                                "exlm_chem checkpoint directory or 'default'")
    return directory


def load_backbone(pretrained: str | os.PathLike[str] | None, preset: str,
                  dropout: float) -> Backbone:
    """Encoder weights, config and tokenizer to fine-tune from."""
    if pretrained is None:
        tokenizer = SmilesTokenizer()
        config = ExLMConfig.preset(preset, vocab_size=len(tokenizer), objective="mlm",
                                   dropout=dropout)
        return Backbone(config, tokenizer, None, f"random:{preset}")
    path = resolve_pretrained(pretrained)
    meta = saved_metadata(path)
    if meta is not None and meta.get("format") == ESTIMATOR_FORMAT:
        raise CheckpointError(f"{path} holds a fitted {meta.get('estimator')}; restore it "
                              "with its .load(path), not as pretrained=")
    model, config, _ = load_checkpoint(path)
    tokenizer = SmilesTokenizer.from_file(path / "vocab.txt")
    config = dataclasses.replace(config, dropout=dropout)
    return Backbone(config, tokenizer, model.encoder.state_dict(), str(path))
