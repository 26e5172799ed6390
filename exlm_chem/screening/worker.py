"""What a Dask worker does with one chunk: predict or embed it, write its part.

The model is loaded once per worker process and kept in a module-level cache keyed by
its path and SHA-256 (a worker process imports this module once; its task threads share
the cache), so a worker that runs a thousand chunks loads it once. On load the worker
hashes the files it sees and refuses a model that differs from the driver's, which
catches a remote worker with another copy at the same path.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.screening.manifest import PART_KEY, model_sha256

EMBED, PREDICT, ADMET = "embed", "predict", "admet"


class ModelSpec(NamedTuple):
    path: str
    sha256: str
    mode: str  # "predict", "embed" or "admet" (an ADMET panel's table)
    device: str  # "auto", "cpu", "cuda:0", ...
    pooling: str  # embed mode only
    batch_size: int | None  # None: the API's default
    max_length: int  # embed mode only (an estimator keeps its own)


class PartTask(NamedTuple):
    out: str  # output directory
    name: str  # part file name
    file: str  # input file, as written to the ``file`` column
    start: int  # data row of the first SMILES in ``file``
    smiles: list[str]
    run_id: str
    features: Any = None  # [n, F] cells of the model's feature columns, or None


class PartResult(NamedTuple):
    name: str
    rows: int
    invalid: int
    seconds: float  # wall time of the chunk on the worker (model load excluded)
    cpu_seconds: float  # CPU time of the worker process over the same span
    worker: str  # the worker's address (host:port), or its pid outside Dask
    peak_rss_mb: float  # the worker process's peak resident memory so far


_MODELS: dict[tuple[str, str, str], Any] = {}
_LOCK = threading.Lock()


def load_model(spec: ModelSpec) -> Any:
    """The estimator (predict) or embedding model (embed) for ``spec``, loaded once per
    process."""
    key = (spec.path, spec.sha256, spec.device)
    with _LOCK:  # two task threads must not load it twice
        if key not in _MODELS:
            found = model_sha256(spec.path)
            if found != spec.sha256:
                raise ValueError(f"the model at {spec.path} on this worker has SHA-256 "
                                 f"{found[:12]}..., the driver's has {spec.sha256[:12]}...: "
                                 "the workers must see the same model files")
            _MODELS[key] = _load(spec)
        return _MODELS[key]


def _load(spec: ModelSpec) -> Any:
    if spec.mode == ADMET:
        from exlm_chem.admet.panel import Panel

        return Panel.load(spec.path)
    if spec.mode == EMBED:
        from exlm_chem.model.molecule_model import MoleculeModel

        return MoleculeModel.from_checkpoint(spec.path, device=spec.device)
    from exlm_chem.sklearn.prediction import load_estimator

    est = load_estimator(spec.path)
    est.set_params(device=spec.device)
    if spec.batch_size is not None:
        est.set_params(batch_size=spec.batch_size)
    return est


def compute(spec: ModelSpec, smiles: list[str], features: Any = None) -> Any:
    """One row per SMILES: ``valid``, ``invalid_reason`` and the outputs (a DataFrame);
    ``features``: the cells of the model's feature columns [n, F], if it reads some."""
    import numpy as np
    import pandas as pd

    model = load_model(spec)
    if spec.mode == ADMET:  # the panel checks the SMILES itself: its table less the input
        return model.predict(smiles).drop(columns="smiles")
    if spec.mode == EMBED:
        from exlm_chem.model.molecule_model import DEFAULT_BATCH_SIZE

        chunk = model.view(spec.pooling, spec.max_length).embed(
            smiles, spec.batch_size or DEFAULT_BATCH_SIZE)
        outputs = pd.DataFrame(chunk.values,  # [n, d] float32
                               columns=[f"emb_{j}" for j in range(chunk.values.shape[1])])
    else:
        from exlm_chem.sklearn.prediction import output_names, predict_values

        chunk = predict_values(model, smiles, features)  # [n, outputs]; NaN where invalid
        outputs = pd.DataFrame(chunk.values, columns=output_names(model))
    frame = pd.DataFrame({"valid": np.asarray(chunk.valid, dtype=bool),
                          "invalid_reason": [r or "" for r in chunk.reasons]})
    return pd.concat([frame, outputs], axis=1)


def peak_rss_mb() -> float:
    """Peak resident memory of this process since it started its program.

    Linux's VmHWM, not ``ru_maxrss``: a worker process is forked from its nanny before
    exec, and ``ru_maxrss`` keeps the parent's resident size from before the exec.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: KiB on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):  # not inside a Dask worker
        return f"pid-{os.getpid()}"


def run_part(spec: ModelSpec, task: PartTask) -> PartResult:
    """Compute ``task``'s chunk and write its part atomically; the task function of Dask."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from exlm_chem.files.output_owner import check_output_file
    from exlm_chem.files.safe_write import atomic_path

    load_model(spec)  # outside the timer: per-worker rates are model time
    began, began_cpu = time.perf_counter(), time.process_time()
    n = len(task.smiles)
    try:
        results = compute(spec, task.smiles, task.features)
    except ValueError as error:  # e.g. a feature cell that is no number: say where it is
        raise ValueError(f"{task.file}, the chunk from data row {task.start} (its rows "
                         f"count from 0): {error}") from error
    frame = pd.concat([pd.DataFrame({
        "file": pd.Series([task.file] * n, dtype=object),
        "row": np.arange(task.start, task.start + n, dtype=np.int64),
        "smiles": pd.Series(task.smiles, dtype=object),
    }), results], axis=1)
    invalid = int((~frame["valid"]).sum())
    record = {"run_id": task.run_id, "rows": n, "invalid": invalid}
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           PART_KEY: json.dumps(record).encode()})
    with atomic_path(check_output_file(Path(task.out) / task.name)) as tmp:
        pq.write_table(table, tmp)
    return PartResult(task.name, n, invalid, time.perf_counter() - began,
                      time.process_time() - began_cpu, _worker_name(), peak_rss_mb())
