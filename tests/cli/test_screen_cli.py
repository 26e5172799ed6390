"""``exlm-chem screen``: arguments, early errors, and a run against a scheduler address."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from exlm_chem.cli import main

pytest.importorskip("distributed")  # the `screen` extra; CI installs it

SMILES = ["CCO", "c1ccccc1O", "not_a_smiles", "CC(=O)Nc1ccc(O)cc1", "", "N#N", "C1CC"]


@pytest.fixture
def library(tmp_path):
    path = tmp_path / "lib.smi"
    path.write_text("".join(f"{s}\n" for s in SMILES))
    return path


@pytest.fixture
def fake_fitted(tiny_checkpoint, tmp_path):
    """A directory whose metadata says "fitted estimator" (enough for the early checks)."""
    folder = tmp_path / "fitted"
    shutil.copytree(tiny_checkpoint, folder)
    meta = json.loads((folder / "metadata.json").read_text())
    (folder / "metadata.json").write_text(json.dumps({**meta, "estimator": "X"}))
    return folder


def test_scheduler_and_workers_exclude_each_other(tiny_checkpoint, library, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["screen", str(tiny_checkpoint), str(library), "--out", str(tmp_path / "o"),
              "--embed", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_wrong_model_kind_and_inputs_fail_before_any_cluster(tiny_checkpoint, fake_fitted,
                                                             library, tmp_path):
    out = tmp_path / "o"
    bad_scheduler = ["--scheduler", "tcp://127.0.0.1:1"]  # would hang if it were contacted
    with pytest.raises(ValueError, match="pre-trained checkpoint, not a fitted estimator"):
        main(["screen", str(tiny_checkpoint), str(library), "--out", str(out), *bad_scheduler])
    with pytest.raises(ValueError, match="holds a fitted X; --embed needs"):
        main(["screen", str(fake_fitted), str(library), "--out", str(out), "--embed",
              *bad_scheduler])
    with pytest.raises(FileNotFoundError, match="matches no file"):
        main(["screen", str(tiny_checkpoint), str(tmp_path / "*.csv"), "--out", str(out),
              "--embed", *bad_scheduler])
    with pytest.raises(ValueError, match="chunk_rows must be a positive integer"):
        main(["screen", str(tiny_checkpoint), str(library), "--out", str(out), "--embed",
              "--chunk-rows", "0", *bad_scheduler])
    assert not out.exists()


def test_screen_against_a_scheduler_address_then_resume(tiny_checkpoint, library, tmp_path,
                                                        capsys):
    from distributed import LocalCluster

    from exlm_chem import embed

    out = tmp_path / "screen"
    args = ["screen", str(tiny_checkpoint), str(library), "--out", str(out), "--embed",
            "--chunk-rows", "3", "--device", "cpu", "--no-progress"]
    # an in-process worker: the test's own torch, no process start-up
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        assert main([*args, "--scheduler", cluster.scheduler_address]) == 0
    printed = capsys.readouterr().out
    assert f"{out}: 7 rows (3 invalid) in 3 parts; this run computed 7 rows in 3 parts " \
           "(skipped 0 complete)" in printed
    assert "worker tcp://" in printed
    got = pd.read_parquet(out)
    assert got["row"].tolist() == list(range(7)) and got["smiles"].tolist() == SMILES
    direct = embed(SMILES, model=str(tiny_checkpoint), device="cpu")
    np.testing.assert_array_equal(got["valid"].to_numpy(), direct.valid)
    X = got[[f"emb_{j}" for j in range(64)]].to_numpy()
    np.testing.assert_allclose(X[direct.valid], direct.embeddings[direct.valid], rtol=1e-4,
                               atol=1e-5)
    # the scheduler is gone: a finished screen must not need it
    assert main([*args, "--scheduler", "tcp://127.0.0.1:1"]) == 0
    assert "computed 0 rows in 0 parts (skipped 3 complete)" in capsys.readouterr().out
