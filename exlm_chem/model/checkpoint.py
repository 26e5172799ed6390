"""Checkpoint directories: config.json, model.safetensors, vocab.txt, metadata.json.

Loading never unpickles: weights come from safetensors, everything else is JSON or text.
Every load is validated (:mod:`exlm_chem.model.checkpoint_format`): the vocabulary
against the config, the weights against the model the config describes, and the
checksums stored at save time; any problem is a
:class:`~exlm_chem.errors.CheckpointError` naming the file. Writes are atomic at
directory level (:func:`exlm_chem.files.safe_write.atomic_directory`): a crash mid-save leaves
the previous checkpoint whole, and a directory holding anything else is never replaced.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import safetensors.torch
import torch

from exlm_chem.files.safe_write import atomic_directory
from exlm_chem.model.checkpoint_format import (
    CONFIG_FILE,
    FORMAT,
    METADATA_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
    read_parts,
    stamp,
    validate,
)
from exlm_chem.model.config import ExLMConfig

__all__ = ["copy_checkpoint", "load_checkpoint", "save_checkpoint"]

_SHIP_DTYPES = {torch.float32, torch.float16, torch.bfloat16}


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The bare model inside DistributedDataParallel and/or torch.compile wrappers."""
    while True:
        inner = getattr(model, "module", None) or getattr(model, "_orig_mod", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def _vocab_lines(vocab: str | Path | Sequence[str]) -> list[str]:
    """Tokens from a vocabulary file (one per line) or from a sequence of strings."""
    if isinstance(vocab, str | os.PathLike):
        lines = Path(vocab).read_text(encoding="utf-8").splitlines()
        while lines and not lines[-1]:
            lines.pop()
        return lines
    tokens = list(vocab)
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token or "\n" in token or "\r" in token:
            raise ValueError(f"vocabulary entry {i} ({token!r}) is not a one-line string")
    return tokens


def save_checkpoint(
    directory: str | Path,
    model: torch.nn.Module,
    config: ExLMConfig,
    tokenizer_vocab_path_or_tokens: str | Path | Sequence[str],
    metadata: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
) -> Path:
    """Write a checkpoint directory atomically.

    Parameters
    ----------
    directory : path
        Target directory; an existing checkpoint there is replaced only once the new one
        is complete.
    model : ExLMModel
        The model (any module whose ``state_dict`` matches ``ExLMModel(config)``).
    config : ExLMConfig
        Its configuration, written as ``config.json``.
    tokenizer_vocab_path_or_tokens : path or sequence of str
        The vocabulary file to copy, or the tokens in id order; written as ``vocab.txt``
        (one token per line) and checked to fit ``config.vocab_size``.
    metadata : dict, optional
        JSON-serialisable facts (steps, corpus checksum, ...). The package version,
        objective, parameter count, stored dtype and format tag are added.
    dtype : torch.dtype, optional
        Cast floating-point weights to ``torch.float16``/``torch.bfloat16`` for shipping.
        Loading always gives a float32 model.

    Returns
    -------
    Path
        The checkpoint directory.
    """
    from exlm_chem import __version__

    if dtype is not None and dtype not in _SHIP_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(map(str, _SHIP_DTYPES))}, got {dtype}")
    tokens = _vocab_lines(tokenizer_vocab_path_or_tokens)
    if len(tokens) != config.vocab_size:  # a shorter vocabulary would shift ids on load
        raise ValueError(f"vocabulary has {len(tokens)} tokens but config.vocab_size is "
                         f"{config.vocab_size}")

    model = _unwrap(model)
    state = model.state_dict()
    for name, source in getattr(model, "tied_parameters", {}).items():
        if name in state and source in state:
            if state[name].data_ptr() != state[source].data_ptr():
                raise ValueError(f"{name} should be tied to {source} but is a separate tensor")
            del state[name]  # restored from its source on load
    tensors = {}
    for name, tensor in state.items():
        tensor = tensor.detach()
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        tensors[name] = tensor.to("cpu").contiguous()
    meta = {**(metadata or {}), "package_version": __version__, "objective": config.objective,
            "num_parameters": sum(p.numel() for p in model.parameters()),
            "dtype": str(dtype or torch.float32).removeprefix("torch.")}
    meta, header = stamp(meta, config, tokens, FORMAT)
    json.dumps(meta)  # fail before touching the disk if metadata is not JSON-serialisable

    with atomic_directory(directory, kind=FORMAT) as tmp:
        (tmp / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2) + "\n",
                                       encoding="utf-8")
        safetensors.torch.save_file(tensors, str(tmp / WEIGHTS_FILE), metadata=header)
        (tmp / VOCAB_FILE).write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Path(directory)


def load_checkpoint(
    directory: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, ExLMConfig, dict[str, Any]]:
    """Load and validate a checkpoint written by :func:`save_checkpoint` (no unpickling).

    Checkpoints of older formats load too (converted in memory; nothing is rewritten).

    Returns
    -------
    model : ExLMModel
        Float32, on ``map_location``, in eval mode.
    config : ExLMConfig
    metadata : dict
        Contents of ``metadata.json``. The vocabulary is ``directory / VOCAB_FILE``.

    Raises
    ------
    CheckpointError
        A file is missing, corrupt or does not match the others (the message says which);
        or ``directory`` holds a fitted estimator instead.
    """
    from exlm_chem.model.encoder import ExLMModel

    parts = read_parts(directory, FORMAT)
    device = torch.device(map_location)
    with torch.device(device):
        model = ExLMModel(parts.config)
    reference = {k: v for k, v in model.state_dict().items() if k not in model.tied_parameters}
    validate(parts, reference)
    # copies into the existing parameters (casting 16-bit to float32), keeping the tie
    model.load_state_dict(parts.tensors, strict=False)
    model.eval()
    return model, parts.config, parts.metadata


#: metadata fields that :func:`save_checkpoint` writes itself
_WRITTEN_BY_SAVE = ("format", "format_version", "checksums", "package_version", "objective",
                    "num_parameters", "dtype")


def copy_checkpoint(
    source: str | Path,
    directory: str | Path,
    dtype: torch.dtype | None = torch.float16,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Copy a checkpoint (weights, config, vocabulary, metadata), by default in 16 bits.

    What ships or is committed (a model under ``models/``, a run's milestone) is a copy of
    a training checkpoint at half the size; ``metadata`` entries are added or replaced.

    Returns
    -------
    Path
        ``directory``.
    """
    model, config, meta = load_checkpoint(source)
    for key in _WRITTEN_BY_SAVE:
        meta.pop(key, None)
    meta.update(metadata or {})
    return save_checkpoint(directory, model, config, Path(source) / VOCAB_FILE, meta,
                           dtype=dtype)
