"""SMILES -> fixed-size vectors from a pretrained ExLM encoder, aligned with the input.

Every input row gets an output row: rows that fail :func:`~exlm_chem.data.featurize.check_smiles`
get NaN and ``valid=False``, nothing is dropped or shifted. Valid rows are batched by
token length (less padding) and scattered back into input order.

Two entry points: :func:`embed` returns one ``[N, d]`` array; :func:`iter_embeddings`
streams fixed-size chunks so that a large file never sits in memory as one float array.

Examples
--------
>>> X, valid = embed(["CCO", "not a smiles"], model="models/exlm-small")  # doctest: +SKIP
>>> X.shape, valid.tolist()  # doctest: +SKIP
((2, 256), [True, False])
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from exlm_chem.data.batching import sorted_batches
from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.featurize import check_smiles, raise_for_invalid, warn_unknown_tokens
from exlm_chem.data.inference_inputs import inference_expansion, inference_inputs
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.device import resolve_device
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS, pooled_states_each

DEFAULT_BATCH_SIZE = 128  # molecules per forward pass; length sorting keeps padding small
DEFAULT_CHUNK_SIZE = 8192  # rows per streamed chunk: [8192, d] float32 is 8 MB at d=256
_TOKENIZE_SLICE = 4096  # molecules per batch_encode call (bounds the padded id matrix)
ON_INVALID = ("nan", "raise")


class EmbeddingResult(NamedTuple):
    embeddings: np.ndarray  # [N, d] float32; NaN rows where ``valid`` is False
    valid: np.ndarray  # [N] bool


class EmbeddingChunk(NamedTuple):
    start: int  # index of the chunk's first row in the whole input
    embeddings: np.ndarray  # [n, d] float32; NaN rows where ``valid`` is False
    valid: np.ndarray  # [n] bool
    reasons: list[str | None]  # why each invalid row was rejected; None for valid rows



@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """Eval mode for the duration (no dropout), restoring a training model afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


class Embedder:
    """A loaded encoder, its tokenizer and config, ready to embed SMILES.

    Parameters
    ----------
    model : ExLMModel
        The encoder (any module with ExLMModel's ``forward`` signature).
    tokenizer : SmilesTokenizer
        The tokenizer whose ids the model was trained on.
    k_states : int
        Copies of BOS and EOS in the input: :func:`~exlm_chem.data.inference_inputs.
        inference_expansion` of the model's config (1, unexpanded, for an MLM twin).
    device : str or torch.device
        Where to run; ``"auto"`` picks CUDA when available. The model is moved there.
    metadata : dict, optional
        The checkpoint's metadata, kept for reference.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: SmilesTokenizer,
        k_states: int,
        device: str | torch.device = "auto",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.k_states = int(k_states)
        self.metadata = dict(metadata or {})
        self.special = SpecialIds(tokenizer.bos_id, tokenizer.pad_id, tokenizer.eos_id,
                                  tokenizer.mask_id)

    @classmethod
    def from_checkpoint(
        cls, path: str | os.PathLike[str] = "default", device: str | torch.device = "auto"
    ) -> Embedder:
        """Load a checkpoint directory, or ``"default"``: ``$EXLM_CHEM_MODEL``, then
        ``<repo>/models/exlm-small`` (the estimators' rule, shared with them)."""
        from exlm_chem.model.checkpoint import load_checkpoint
        from exlm_chem.model.checkpoint_format import VOCAB_FILE

        directory = checkpoint_dir(path)
        model, config, metadata = load_checkpoint(directory)
        tokenizer = SmilesTokenizer(directory / VOCAB_FILE)
        metadata = {**metadata, "checkpoint": str(directory)}
        return cls(model, tokenizer, inference_expansion(config), device=device,
                   metadata=metadata)

    @property
    def dim(self) -> int:
        """Width d of the embeddings."""
        return int(self.model.config.d_model)

    def to(self, device: str | torch.device) -> Embedder:
        self.device = resolve_device(device)
        self.model.to(self.device)
        return self

    def encode_valid(
        self,
        smiles: Sequence[str],
        pooling: str = DEFAULT_POOLING,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = 256,
        on_batch: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Pooled embeddings [n, d] float32 of already-validated SMILES, in input order.

        ``on_batch(n)`` is called after each forward pass with its number of molecules
        (for progress bars).
        """
        return self.encode_valid_each(smiles, (pooling,), batch_size, max_length,
                                      on_batch)[pooling]

    def encode_valid_each(
        self,
        smiles: Sequence[str],
        poolings: Sequence[str] = POOLINGS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = 256,
        on_batch: Callable[[int], None] | None = None,
    ) -> dict[str, np.ndarray]:
        """:meth:`encode_valid` for several poolings from one forward pass per batch:
        pooling -> [n, d] float32."""
        poolings = tuple(poolings)
        for pooling in poolings:
            _check_options(pooling, batch_size, max_length)
        smiles = list(smiles)
        out = {p: np.empty((len(smiles), self.dim), dtype=np.float32)  # [n, d] each
               for p in poolings}
        if not len(smiles):
            return out
        rows = self._token_rows(smiles, max_length)
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))  # [n]
        with _eval_mode(self.model), torch.inference_mode():
            for batch in sorted_batches(lengths, batch_size):
                pooled = self.pooled_batch_each([rows[i] for i in batch], poolings)
                for pooling in poolings:
                    out[pooling][batch] = pooled[pooling]
                if on_batch is not None:
                    on_batch(len(batch))
        return out

    def _token_rows(self, smiles: Sequence[str], max_length: int) -> list[np.ndarray]:
        """Ragged id rows ``[BOS, ..., EOS]``: one padded matrix for a million molecules
        would hold mostly padding (and 2 GB at 256 columns)."""
        rows: list[np.ndarray] = []
        for start in range(0, len(smiles), _TOKENIZE_SLICE):
            part = self.tokenizer.batch_encode(smiles[start : start + _TOKENIZE_SLICE],
                                               max_length=max_length)
            rows.extend(r[:n].copy() for r, n in zip(part.input_ids, part.lengths, strict=True))
        return rows

    def pooled_batch(self, rows: Sequence[np.ndarray],
                     pooling: str = DEFAULT_POOLING) -> np.ndarray:
        """One forward pass: token id rows ``[BOS, ..., EOS]`` -> pooled [B, d] float32.

        The caller sets eval/inference mode (see :meth:`encode_valid`).
        """
        return self.pooled_batch_each(rows, (pooling,))[pooling]

    def pooled_batch_each(self, rows: Sequence[np.ndarray],
                          poolings: Sequence[str]) -> dict[str, np.ndarray]:
        """:meth:`pooled_batch` for several poolings of the same forward pass."""
        tensors = inference_inputs(rows, self.k_states, self.special)
        input_ids, pos_original, pos_copy, padding_mask = (
            t.to(self.device) for t in tensors)
        pooled = pooled_states_each(self.model, input_ids, pos_original, pos_copy,
                                    padding_mask, tuple(poolings))  # pooling -> [B, d]
        return {p: v.float().cpu().numpy() for p, v in pooled.items()}

    def embed_rows(
        self,
        smiles: Sequence[Any],
        pooling: str = DEFAULT_POOLING,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = 256,
        on_batch: Callable[[int], None] | None = None,
        on_invalid: str = "nan",
    ) -> EmbeddingChunk:
        """Check then embed arbitrary input rows (``start`` is 0).

        Invalid rows get NaN with ``on_invalid="nan"``; with ``"raise"`` any invalid row
        raises one :class:`~exlm_chem.errors.InvalidSmilesError` naming every bad row and
        its reason, before anything is encoded.
        """
        _check_options(pooling, batch_size, max_length)
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        smiles = list(smiles)
        checked = check_smiles(smiles)
        if on_invalid == "raise":
            raise_for_invalid(smiles, checked)
        valid_rows = np.flatnonzero(checked.valid)
        out = np.full((len(smiles), self.dim), np.nan, dtype=np.float32)  # [n, d]
        valid_smiles = [checked.canonical[i] for i in valid_rows]  # the pre-training form
        warn_unknown_tokens(self.tokenizer, valid_smiles, valid_rows)
        out[valid_rows] = self.encode_valid(valid_smiles, pooling, batch_size, max_length,
                                            on_batch)
        if on_batch is not None and len(valid_rows) < len(smiles):
            on_batch(len(smiles) - len(valid_rows))  # invalid rows are done too
        return EmbeddingChunk(0, out, checked.valid, checked.reasons)


def _check_options(pooling: str, batch_size: int, max_length: int) -> None:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 3:
        raise ValueError(f"max_length must be an integer >= 3 (BOS, a token, EOS), "
                         f"got {max_length!r}")


def checkpoint_dir(path: str | os.PathLike[str] = "default") -> Path:
    """The checkpoint directory meant by ``path``: ``"default"`` (see
    :func:`~exlm_chem.model.pretrained.resolve_pretrained`) or a directory."""
    if isinstance(path, str) and path == "default":
        from exlm_chem.model.pretrained import resolve_pretrained

        return resolve_pretrained(path)
    # load_checkpoint names the missing files of an incomplete directory
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"model {str(path)!r} is not a directory; pass an "
                                "exlm_chem checkpoint directory or 'default'")
    return directory


# One loaded Embedder per (checkpoint directory, device) and process: transformers that
# store only a checkpoint name (ExLMEmbedder, the DeepChem featurizer) are cloned, pickled
# and re-created freely by scikit-learn and DeepChem, and must not reload weights each time.
_LOADED: dict[tuple[str, str], Embedder] = {}
_LOADED_LOCK = threading.Lock()


def cached_embedder(
    model: str | os.PathLike[str] = "default", device: str | torch.device = "auto"
) -> Embedder:
    """The :class:`Embedder` of checkpoint ``model`` on ``device``, loaded once per process.

    Keyed by the resolved directory and device, so ``"default"`` and the path it names
    share one copy. The returned Embedder is shared: do not move it (``.to``); ask for
    another ``device`` instead. A checkpoint rewritten in place is not reloaded.
    """
    directory = checkpoint_dir(model).resolve()
    resolved = resolve_device(device)
    key = (str(directory), str(resolved))
    with _LOADED_LOCK:  # two threads must not load the same checkpoint twice
        if key not in _LOADED:
            embedder = Embedder.from_checkpoint(directory, device=resolved)
            embedder.model.eval()  # _eval_mode then never flips it under another thread
            _LOADED[key] = embedder
        return _LOADED[key]


def as_embedder(
    model: str | os.PathLike[str] | Embedder, device: str | torch.device = "auto"
) -> Embedder:
    """An :class:`Embedder` from a checkpoint name/path, or the given one.

    A given Embedder is moved only when ``device`` is not ``"auto"``.
    """
    if isinstance(model, Embedder):
        if not (isinstance(device, str) and device == "auto"):
            model.to(device)
        return model
    if isinstance(model, str | os.PathLike):
        return Embedder.from_checkpoint(model, device=device)
    raise TypeError(f"model must be a checkpoint path/name or an Embedder, "
                    f"got {type(model).__name__}")


def embed(
    smiles: Iterable[Any],
    model: str | os.PathLike[str] | Embedder = "default",
    pooling: str = DEFAULT_POOLING,
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
    model : str, path or Embedder
        Checkpoint directory, ``"default"`` (``$EXLM_CHEM_MODEL``, then
        ``<repo>/models/exlm-small``) or an already loaded :class:`Embedder`.
    pooling : {"bos", "mean"}, default "mean"
        ``mean``: mean over all real (expanded) tokens; ``bos``: the first BOS copy (the
        paper's fine-tuning pooling).
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
    """
    _check_options(pooling, batch_size, max_length)  # before loading a model
    embedder = as_embedder(model, device)
    rows = list(smiles)
    with _progress_bar(progress, total=len(rows)) as bar:
        chunk = embedder.embed_rows(rows, pooling, batch_size, max_length,
                                    on_batch=bar.update if bar is not None else None)
    return EmbeddingResult(chunk.embeddings, chunk.valid)


def iter_embeddings(
    smiles: Iterable[Any],
    model: str | os.PathLike[str] | Embedder = "default",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    pooling: str = DEFAULT_POOLING,
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
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    _check_options(pooling, batch_size, max_length)
    embedder = as_embedder(model, device)
    total = len(smiles) if hasattr(smiles, "__len__") else None
    return _stream(embedder, iter(smiles), chunk_size, total, pooling, batch_size, max_length,
                   progress)


def _stream(
    embedder: Embedder,
    iterator: Iterator[Any],
    chunk_size: int,
    total: int | None,
    pooling: str,
    batch_size: int,
    max_length: int,
    progress: bool,
) -> Iterator[EmbeddingChunk]:
    start = 0
    with _progress_bar(progress, total=total) as bar:
        while rows := list(islice(iterator, chunk_size)):
            chunk = embedder.embed_rows(rows, pooling, batch_size, max_length,
                                        on_batch=bar.update if bar is not None else None)
            yield chunk._replace(start=start)
            start += len(rows)


@contextlib.contextmanager
def _progress_bar(enabled: bool, total: int | None) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="mol", desc="embed") as bar:
        yield bar
