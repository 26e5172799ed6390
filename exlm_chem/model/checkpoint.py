"""Checkpoint directories: config.json, model.safetensors, vocab.txt, metadata.json.

Loading never unpickles: weights come from safetensors, everything else is JSON or text.
Writes are atomic at directory level: a checkpoint is assembled in a temporary sibling
directory and renamed into place, so a crash mid-save leaves the previous checkpoint
(if any) whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import safetensors.torch
import torch

from exlm_chem.atomic_files import atomic_path, default_dir_mode, fsync_dir
from exlm_chem.model.config import ExLMConfig

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
METADATA_FILE = "metadata.json"
FORMAT = "exlm_chem-checkpoint-1"

_SHIP_DTYPES = {torch.float32, torch.float16, torch.bfloat16}


# ---- atomic file-system helpers (reused by the trainer for its training state) ---------------
_fsync_dir = fsync_dir


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON to ``path`` via a temporary file and ``os.replace``."""
    text = json.dumps(obj, indent=2) + "\n"  # serialise first: a TypeError leaves no debris
    with atomic_path(path, durable=True) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Build a directory in a temporary sibling and move it to ``path`` on success.

    Yields the temporary directory to fill. If the ``with`` body raises, the temporary
    directory is removed and ``path`` is untouched. If ``path`` already exists it is
    renamed aside, the new directory renamed in, and the old one deleted; the only
    window where ``path`` is missing is between two renames on the same file system.

    Examples
    --------
    >>> with atomic_directory("runs/step_1000") as tmp:  # doctest: +SKIP
    ...     (tmp / "state.json").write_text("{}")
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.tmp-"))
    os.chmod(tmp, default_dir_mode())  # mkdtemp makes 0700; a published checkpoint is shared
    try:
        yield tmp
        for child in tmp.iterdir():  # make the contents durable before publishing them
            if child.is_file():
                with open(child, "rb") as fh:
                    os.fsync(fh.fileno())
        _fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists():
        if not path.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
            raise FileExistsError(f"{path} exists and is not a directory; not replacing it")
        old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.old-"))
        os.replace(path, old / path.name)
    try:
        os.replace(tmp, path)
    except BaseException:
        if old is not None:  # put the previous version back
            os.replace(old / path.name, path)
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(path.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# ---- save / load ------------------------------------------------------------------------------
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
    if len(tokens) > config.vocab_size:
        raise ValueError(f"vocabulary has {len(tokens)} tokens but config.vocab_size is "
                         f"{config.vocab_size}")

    model = _unwrap(model)
    state = model.state_dict()
    tied = getattr(model, "tied_parameters", {})
    for name, source in tied.items():
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
    num_parameters = sum(p.numel() for p in model.parameters())

    meta = dict(metadata or {})
    meta.update({
        "format": FORMAT,
        "package_version": __version__,
        "objective": config.objective,
        "num_parameters": num_parameters,
        "dtype": str(dtype or torch.float32).removeprefix("torch."),
    })
    json.dumps(meta)  # fail before touching the disk if metadata is not JSON-serialisable

    with atomic_directory(directory) as tmp:
        (tmp / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2) + "\n",
                                       encoding="utf-8")
        safetensors.torch.save_file(tensors, str(tmp / WEIGHTS_FILE),
                                    metadata={"format": FORMAT})
        (tmp / VOCAB_FILE).write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Path(directory)


def load_checkpoint(
    directory: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[torch.nn.Module, ExLMConfig, dict[str, Any]]:
    """Load a checkpoint written by :func:`save_checkpoint` (no unpickling).

    Returns
    -------
    model : ExLMModel
        Float32, on ``map_location``, in eval mode.
    config : ExLMConfig
    metadata : dict
        Contents of ``metadata.json``. The vocabulary is ``directory / VOCAB_FILE``.
    """
    from exlm_chem.model.encoder import ExLMModel

    directory = Path(directory)
    missing_files = [f for f in (CONFIG_FILE, WEIGHTS_FILE, METADATA_FILE, VOCAB_FILE)
                     if not (directory / f).is_file()]
    if missing_files:
        raise FileNotFoundError(f"{directory} is not a complete exlm_chem checkpoint: "
                                f"missing {', '.join(missing_files)}")
    config = ExLMConfig.from_json(directory / CONFIG_FILE)
    metadata = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))

    device = torch.device(map_location)
    with torch.device(device):
        model = ExLMModel(config)
    tensors = safetensors.torch.load_file(str(directory / WEIGHTS_FILE), device=str(device))
    expected = set(model.state_dict()) - set(model.tied_parameters)
    missing = sorted(expected - set(tensors))
    unexpected = sorted(set(tensors) - expected)
    if missing or unexpected:
        raise ValueError(
            f"{directory / WEIGHTS_FILE} does not match its config.json: "
            f"missing {missing or 'nothing'}; unexpected {unexpected or 'nothing'}")
    reference = model.state_dict()
    for name, tensor in tensors.items():
        if tensor.shape != reference[name].shape:
            raise ValueError(f"{directory / WEIGHTS_FILE}: {name} has shape "
                             f"{tuple(tensor.shape)}, config.json implies "
                             f"{tuple(reference[name].shape)}")
    # copies into the existing parameters (casting 16-bit to float32), keeping the tie
    model.load_state_dict(tensors, strict=False)
    model.eval()
    return model, config, metadata
