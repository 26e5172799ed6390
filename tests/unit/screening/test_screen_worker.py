"""One chunk on a worker, outside Dask: the part's rows and footer, the model cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from exlm_chem.screening import worker
from exlm_chem.screening.manifest import PART_KEY, model_sha256
from exlm_chem.screening.worker import ModelSpec, PartTask, load_model, run_part

SMILES = ["CCO", "not_a_smiles", "c1ccccc1O", ""]


@pytest.fixture
def spec(tiny_checkpoint) -> ModelSpec:
    return ModelSpec(str(tiny_checkpoint), model_sha256(tiny_checkpoint), "embed", "cpu",
                     "bos", 2, 64)


def test_run_part_writes_one_atomic_part(spec, tmp_path):
    from exlm_chem import embed

    task = PartTask(str(tmp_path), "part-000002-00000003.parquet", "/lib/x.smi", 300,
                    SMILES, "run0")
    result = run_part(spec, task)
    assert (result.name, result.rows, result.invalid) == (task.name, 4, 2)
    assert result.worker == f"pid-{os.getpid()}" and result.peak_rss_mb > 50
    assert [p.name for p in tmp_path.iterdir()] == [task.name]
    table = pq.read_table(tmp_path / task.name)
    assert json.loads(table.schema.metadata[PART_KEY]) == {"run_id": "run0", "rows": 4,
                                                           "invalid": 2}
    frame = table.to_pandas()
    assert frame.columns[:5].tolist() == ["file", "row", "smiles", "valid", "invalid_reason"]
    assert frame["file"].tolist() == ["/lib/x.smi"] * 4
    assert frame["row"].tolist() == [300, 301, 302, 303]
    assert frame["smiles"].tolist() == SMILES
    assert frame["valid"].tolist() == [True, False, True, False]
    assert frame["invalid_reason"].str[:18].tolist() == ["", "SMILES Parse Error", "",
                                                "empty SMILES"]
    X = frame[[f"emb_{j}" for j in range(64)]].to_numpy()
    direct = embed(SMILES, model=spec.path, pooling=spec.pooling, max_length=64,
                   device="cpu").embeddings
    np.testing.assert_allclose(X[[0, 2]], direct[[0, 2]], rtol=1e-4, atol=1e-5)
    assert np.isnan(X[[1, 3]]).all() and X.dtype == np.float32


def test_the_model_is_loaded_once_per_process(spec, monkeypatch):
    monkeypatch.setattr(worker, "_MODELS", {})
    calls = []
    real = worker._load
    monkeypatch.setattr(worker, "_load", lambda s: calls.append(s) or real(s))
    first = load_model(spec)
    assert load_model(spec) is first and len(calls) == 1
    assert load_model(spec._replace(pooling="mean")) is first  # a task option, same model


def test_a_worker_refuses_a_model_that_differs_from_the_drivers(spec, monkeypatch):
    monkeypatch.setattr(worker, "_MODELS", {})
    with pytest.raises(ValueError, match=r"has SHA-256 .{12}\.\.\., the driver's has "
                                         r"000000000000\.\.\.: the workers must see the same"):
        load_model(spec._replace(sha256="0" * 64))


def test_importing_the_package_stays_cheap():
    code = ("import sys, exlm_chem; heavy = [m for m in ('torch', 'dask', 'distributed', "
            "'pyarrow') if m in sys.modules]; assert not heavy, heavy; "
            "from exlm_chem import screen; assert screen.__module__ == "
            "'exlm_chem.screening.run'; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
