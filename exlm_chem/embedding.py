"""SMILES -> fixed-size vectors from a pretrained ExLM encoder, aligned with the input.

A thin client of :class:`~exlm_chem.model.molecule_model.MoleculeModel`: every input row
gets an output row, rows that fail the model's SMILES check get NaN and ``valid=False``,
nothing is dropped or shifted.

Two entry points: :func:`embed` returns one ``[N, d]`` array; :func:`iter_embeddings`
streams fixed-size chunks so that a large file never sits in memory as one float array.
:func:`cached_model` keeps one loaded encoder per checkpoint and device for the
transformers that store only a checkpoint name (``ExLMEmbedder``, the DeepChem featurizer).

Examples
--------
>>> X, valid = embed(["CCO", "not a smiles"], model="models/exlm-small")  # doctest: +SKIP
>>> X.shape, valid.tolist()  # doctest: +SKIP
((2, 256), [True, False])
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, NamedTuple

import numpy as np
import torch

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.device import resolve_device
from exlm_chem.model.molecule_model import DEFAULT_BATCH_SIZE, MoleculeModel, check_max_length
from exlm_chem.model.pooling import DEFAULT_POOLING, Pooling
from exlm_chem.model.pretrained import checkpoint_dir

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_CHUNK_SIZE", "EmbeddingChunk", "EmbeddingResult",
           "as_model", "cached_model", "embed", "iter_embeddings"]

DEFAULT_CHUNK_SIZE = 8192  # rows per streamed chunk: [8192, d] float32 is 8 MB at d=256


class EmbeddingResult(NamedTuple):
    embeddings: np.ndarray  # [N, d] float32; NaN rows where ``valid`` is False
    valid: np.ndarray  # [N] bool


class EmbeddingChunk(NamedTuple):
    start: int  # index of the chunk's first row in the whole input
    embeddings: np.ndarray  # [n, d] float32; NaN rows where ``valid`` is False
    valid: np.ndarray  # [n] bool
    reasons: list[str | None]  # why each invalid row was rejected; None for valid rows


# One loaded model per (checkpoint directory, device) and process: transformers that store
# only a checkpoint name (ExLMEmbedder, the DeepChem featurizer) are cloned, pickled and
# re-created freely by scikit-learn and DeepChem, and must not reload weights each time.
_LOADED: dict[tuple[str, str], MoleculeModel] = {}
_LOADED_LOCK = threading.Lock()


def cached_model(model: str | os.PathLike[str] = "default",
                 device: str | torch.device = "auto") -> MoleculeModel:
    """The embedding model of checkpoint ``model`` on ``device``, loaded once per process.

    Keyed by the resolved directory and device, so ``"default"`` and the path it names
    share one copy. It is shared and in eval mode: do not move it or train it; ask for
    another ``device`` instead, and for another pooling or ``max_length`` through
    :meth:`~exlm_chem.model.molecule_model.MoleculeModel.view`. A checkpoint rewritten in
    place is not reloaded.
    """
    directory = checkpoint_dir(model).resolve()
    resolved = resolve_device(device)
    key = (str(directory), str(resolved))
    with _LOADED_LOCK:  # two threads must not load the same checkpoint twice
        if key not in _LOADED:
            _LOADED[key] = MoleculeModel.from_checkpoint(directory, device=resolved)
        return _LOADED[key]


def as_model(model: str | os.PathLike[str] | MoleculeModel,
             device: str | torch.device = "auto") -> MoleculeModel:
    """A :class:`MoleculeModel` from a checkpoint name/path, or the given one.

    A given model is moved only when ``device`` is not ``"auto"``.
    """
    if isinstance(model, MoleculeModel):
        if not (isinstance(device, str) and device == "auto"):
            model.to(resolve_device(device))
        return model
    if isinstance(model, str | os.PathLike):
        return MoleculeModel.from_checkpoint(model, device=device)
    raise TypeError(f"model must be a checkpoint path/name or a MoleculeModel, "
                    f"got {type(model).__name__}")


def _check_options(pooling: str | Pooling, batch_size: int, max_length: int) -> Pooling:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    check_max_length(max_length)
    return Pooling.of(pooling)


def embed(
    smiles: Iterable[Any],
    model: str | os.PathLike[str] | MoleculeModel = "default",
    pooling: str | Pooling = DEFAULT_POOLING,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = 256,
    device: str | torch.device = "auto",
    progress: bool = False,
) -> EmbeddingResult:
    """Embed SMILES with a pretrained encoder; one output row per input row.

    Parameters
    ----------
    smiles : iterable
        SMILES strings (list, NumPy array, pandas Series, ...). Entries that are not a
        non-empty, RDKit-parsable string of at most 2000 characters are invalid.
    model : str, path or MoleculeModel
        Checkpoint directory, ``"default"`` (``$EXLM_CHEM_MODEL``, then
        ``<repo>/models/exlm-small``) or an already loaded :class:`MoleculeModel`.
    pooling : {"bos", "mean"} or Pooling, default "mean"
        Which states, of which layer: see :class:`~exlm_chem.model.pooling.Pooling`.
    batch_size : int
        Molecules per forward pass.
    max_length : int
        Tokens per molecule including BOS/EOS; longer SMILES are truncated (EOS kept).
    device : str or torch.device
        ``"auto"``: CUDA when available, else CPU.
    progress : bool
        Show a tqdm bar (molecules).

    Returns
    -------
    EmbeddingResult
        ``(embeddings [N, d] float32, valid [N] bool)``; invalid rows are NaN.

    Raises
    ------
    TypeError
        ``smiles`` is a single string (wrap it in a list).
    """
    smiles_sequence(smiles, "smiles")  # "CCO" would be three molecules, C, C and O
    pooling = _check_options(pooling, batch_size, max_length)  # before loading a model
    net = as_model(model, device).view(pooling, max_length)
    rows = list(smiles)
    with _progress_bar(progress, len(rows)) as bar:
        out = net.embed(rows, batch_size, on_batch=bar.update)
    return EmbeddingResult(out.values, out.valid)


def iter_embeddings(
    smiles: Iterable[Any],
    model: str | os.PathLike[str] | MoleculeModel = "default",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    pooling: str | Pooling = DEFAULT_POOLING,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = 256,
    device: str | torch.device = "auto",
    progress: bool = False,
) -> Iterator[EmbeddingChunk]:
    """Stream embeddings chunk by chunk; only one chunk of input and output is held.

    Takes the same options as :func:`embed`. The chunks, concatenated, are
    :func:`embed`'s result (up to float rounding: batches are formed within a chunk).

    Returns
    -------
    iterator of EmbeddingChunk
        ``start`` (row offset), ``embeddings`` [n, d] float32 (NaN where invalid),
        ``valid`` [n] bool and ``reasons`` (None for valid rows). Every chunk but the
        last has ``chunk_size`` rows.
    """
    # checked here, not at the first next(): a bad argument fails where it is passed
    smiles_sequence(smiles, "smiles")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    pooling = _check_options(pooling, batch_size, max_length)
    net = as_model(model, device).view(pooling, max_length)
    total = len(smiles) if hasattr(smiles, "__len__") else None
    return _stream(net, iter(smiles), chunk_size, total, batch_size, progress)


def _stream(net: MoleculeModel, iterator: Iterator[Any], chunk_size: int, total: int | None,
            batch_size: int, progress: bool) -> Iterator[EmbeddingChunk]:
    start = 0
    with _progress_bar(progress, total) as bar:
        while rows := list(islice(iterator, chunk_size)):
            out = net.embed(rows, batch_size, on_batch=bar.update)
            yield EmbeddingChunk(start, out.values, out.valid, out.reasons)
            start += len(rows)


def _progress_bar(enabled: bool, total: int | None) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="mol", desc="embed", disable=not enabled)
