"""``screen``: check the model and inputs, claim the output directory, run, summarise.

The driver reads the inputs once, in order, cutting the same chunks on every run
(:mod:`~exlm_chem.screening.inputs`); :mod:`~exlm_chem.screening.feed` sends the ones
without a complete part to the cluster.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.files.safe_write import write_json_atomic
from exlm_chem.model.pooling import DEFAULT_POOLING, Pooling
from exlm_chem.screening.feed import LazyClient, Tally, WorkerStats, drive
from exlm_chem.screening.inputs import check_input_columns, iter_chunks, resolve_inputs
from exlm_chem.screening.manifest import (
    MANIFEST,
    check_model_kind,
    identity,
    model_sha256,
    open_output,
    remove_temporaries,
    run_id,
)
from exlm_chem.screening.worker import ADMET, EMBED, PREDICT, ModelSpec

DEFAULT_CHUNK_ROWS = 10_000


class ScreenSummary(NamedTuple):
    rows: int  # rows in the output, computed now or by an earlier run
    invalid_rows: int
    seconds: float  # wall time of this run
    rows_computed: int  # rows computed by this run
    parts_written: int
    parts_skipped: int  # complete from an earlier run
    workers: dict[str, WorkerStats]  # per worker address, this run only

    @property
    def mol_per_s(self) -> float:
        """Total throughput of this run: rows computed per wall-clock second."""
        return self.rows_computed / self.seconds if self.seconds > 0 else float("nan")


class ScreenResult(NamedTuple):
    path: Path
    summary: ScreenSummary


def _check_numbers(**values: int | None) -> None:
    """Worker settings checked by the driver, before it claims the output directory."""
    for name, value in values.items():
        least = 3 if name == "max_length" else 1  # BOS, a token, EOS
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < least):
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")


def _settings(embed: bool, chunk_rows: int, smiles_column: str, pooling: str,
              max_length: int, feature_columns: list[str]) -> dict[str, Any]:
    settings: dict[str, Any] = {"chunk_rows": chunk_rows, "smiles_column": smiles_column}
    if embed:  # a fitted estimator keeps its own pooling and max_length
        settings.update(pooling=pooling, max_length=max_length)
    if feature_columns:  # absent otherwise: earlier outputs still resume
        settings["feature_columns"] = feature_columns
    return settings


def _feature_columns(model: str | os.PathLike[str], embed: bool,
                     given: Sequence[str] | None) -> dict[str, list[str]]:
    """The input columns a fitted model reads beside the SMILES, ``{what: columns}`` as
    :func:`~exlm_chem.sklearn.prediction.input_feature_columns` gives them."""
    from exlm_chem.sklearn.prediction import input_feature_columns, saved_feature_columns

    if embed:
        if given:
            raise ValueError(f"--feature-columns {list(given)} go with a fitted model's "
                             "predictions; --embed reads the SMILES alone")
        return {}
    return input_feature_columns(saved_feature_columns(model), given)


def screen(
    model: str | os.PathLike[str],
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    client: Any = None,
    *,
    embed: bool = False,
    scheduler: str | None = None,
    workers: int | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    smiles_column: str = "smiles",
    feature_columns: Sequence[str] | None = None,
    pooling: str = DEFAULT_POOLING,
    batch_size: int | None = None,
    max_length: int = 256,
    device: str = "auto",
    progress: bool = False,
) -> ScreenResult:
    """Predict (or embed) every SMILES of ``inputs`` on a Dask cluster into ``out``.

    Parameters
    ----------
    model : path
        A fitted estimator directory (``exlm-chem fit`` or ``.save``), an ADMET panel
        (:mod:`exlm_chem.admet`: its table, :meth:`~exlm_chem.admet.panel.Panel.predict`),
        or with ``embed=True`` a pre-trained checkpoint directory. Every worker must see it.
    inputs : path, glob or sequence of them
        ``.smi``/``.smiles``/``.csv`` (optionally ``.gz``) or ``.parquet`` files.
    out : path
        Output directory, seen by every worker: ``part-*.parquet`` files and
        ``_manifest.json``. Read it back with ``pandas.read_parquet(out)``.
    client : distributed.Client, optional
        Cluster to use. Otherwise ``scheduler`` (an address) or a new local cluster of
        ``workers`` single-threaded processes (default: one per CPU core); ``workers=0``
        computes the chunks in this process, without Dask.
    embed : bool
        Write embeddings (``emb_0 ..``) instead of predictions.
    chunk_rows : int
        Rows per chunk and per part; a killed worker loses at most one chunk of work.
    smiles_column : str
        SMILES column of CSV and Parquet inputs.
    feature_columns : sequence of str, optional
        For a model fitted with feature columns (``exlm-chem fit --feature-columns``):
        the input columns holding them, one for each in the model's order; by default
        the columns of the model's names. Every input must hold them (CSV or Parquet);
        a missing one is an error naming it before any work.
    pooling, max_length
        Embedding options (see :func:`exlm_chem.embedding.embed`).
    batch_size : int, optional
        Molecules per forward pass (default: the embedder's, or the estimator's own).
    device : str
        Worker device: ``"auto"`` (CUDA when the worker has it), ``"cpu"``, ``"cuda:0"``.
        For several GPUs, give each worker its own (e.g. dask-cuda's LocalCUDACluster,
        which sets ``CUDA_VISIBLE_DEVICES`` per worker) and pass its client or address.
    progress : bool
        A progress bar over rows.

    Returns
    -------
    ScreenResult
        ``path`` (the output directory) and ``summary`` (:class:`ScreenSummary`). Columns
        of the output: ``file``, ``row`` (0-based data row in that file), ``smiles``,
        ``valid``, ``invalid_reason``, then the predictions (one float column per
        target, named as by ``exlm-chem predict``) or ``emb_0 .. emb_{d-1}`` (float32);
        NaN where invalid.
    """
    began = time.perf_counter()
    if client is not None and (scheduler or workers):
        raise ValueError("pass either client, or scheduler/workers, not both")
    if scheduler and workers:
        raise ValueError("--workers starts a local cluster; it cannot go with --scheduler")
    _check_numbers(batch_size=batch_size, max_length=max_length)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 0):
        raise ValueError(f"workers must be an integer >= 0, got {workers!r}")
    if embed:
        Pooling.of(pooling)  # checked by the driver, before it claims the output directory
    out = Path(out).expanduser().resolve()
    from exlm_chem.admet.panel import is_panel

    admet = not embed and is_panel(model)
    if admet and feature_columns:
        raise ValueError(f"--feature-columns {list(feature_columns)} go with a fitted "
                         "model; an ADMET panel reads the SMILES alone")
    if not admet:
        check_model_kind(model, embed)
    files = resolve_inputs(inputs)
    required = {} if admet else _feature_columns(model, embed, feature_columns)
    for file in files:
        check_input_columns(file.path, smiles_column, required)
    columns = [c for cols in required.values() for c in cols]
    settings = _settings(embed, chunk_rows, smiles_column, pooling, max_length, columns)
    chunks = iter_chunks(files, chunk_rows, smiles_column, columns)  # checks chunk_rows
    model_path = str(Path(model).expanduser().resolve())
    mode = ADMET if admet else EMBED if embed else PREDICT
    spec = ModelSpec(model_path, model_sha256(model_path), mode, device, pooling, batch_size,
                     max_length)
    ident = identity(spec.sha256, spec.mode, settings, files)
    extra = {"model_path": model_path, "batch_size": batch_size, "device": device}
    open_output(out, ident, extra)
    remove_temporaries(out)
    run = run_id(ident)
    tally = Tally()
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(_bar(progress))
        cluster = LazyClient(client, scheduler, workers, stack)
        drive(cluster, chunks, spec, out, [f.path for f in files], run, tally, bar)
    remove_temporaries(out)  # debris of writers killed during this run
    seconds = time.perf_counter() - began
    summary = ScreenSummary(tally.rows, tally.invalid, seconds, tally.computed, tally.written,
                            tally.skipped, tally.workers)
    write_json_atomic(out / MANIFEST, {**ident, **extra, "last_run": {
        "rows": summary.rows, "invalid_rows": summary.invalid_rows,
        "rows_computed": summary.rows_computed, "seconds": round(seconds, 3)}})
    return ScreenResult(out, summary)


@contextlib.contextmanager
def _bar(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from tqdm.auto import tqdm

    with tqdm(unit="mol", desc="screen") as bar:
        yield bar
