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


@pytest.fixture(scope="module")
def column_model(tiny_checkpoint, moleculenet_dir, tmp_path_factory):
    """A classifier fitted with one user feature column (``logp_guess``), 1 epoch."""
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    frame = pd.read_csv(moleculenet_dir / "bbbp.csv.gz").iloc[200:232].reset_index(drop=True)
    frame["logp_guess"] = np.linspace(-2, 4, len(frame))
    clf = ExLMMoleculeClassifier(pretrained=str(tiny_checkpoint), features="columns",
                                 epochs=1, batch_size=16, validation_fraction=0.0,
                                 device="cpu", random_state=0)
    clf.fit(frame[["smiles", "logp_guess"]], frame["p_np"])
    return clf.save(tmp_path_factory.mktemp("column_model") / "m"), frame


def test_screen_reads_the_models_feature_columns(column_model, tmp_path, capsys):
    from distributed import LocalCluster

    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    model, frame = column_model
    library = frame[["smiles", "logp_guess"]].head(7).copy()
    library.loc[2, "smiles"] = "C1CC"  # invalid: NaN, and no row moves
    library.loc[4, "logp_guess"] = None  # missing: the training median, as in predict
    named = tmp_path / "named.csv"
    library.to_csv(named, index=False)
    renamed = tmp_path / "renamed.parquet"
    library.rename(columns={"logp_guess": "xlogp"}).to_parquet(renamed)
    expected = ExLMMoleculeClassifier.load(model).predict_proba(library)[:, 1]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        for path, extra in ((named, []), (renamed, ["--feature-columns", "xlogp"])):
            out = tmp_path / f"out_{path.stem}"
            assert main(["screen", str(model), str(path), "--out", str(out), "--chunk-rows",
                         "3", "--device", "cpu", "--no-progress", *extra,
                         "--scheduler", cluster.scheduler_address]) == 0
            got = pd.read_parquet(out)
            assert got["valid"].tolist() == [i != 2 for i in range(7)]
            np.testing.assert_allclose(got["probability"], expected, rtol=1e-5)
    capsys.readouterr()
    # predict takes the same option, with the same meaning
    assert main(["predict", str(model), str(renamed), "--out", str(tmp_path / "p.csv"),
                 "--feature-columns", "xlogp", "--no-progress"]) == 0
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv")["probability"], expected,
                               rtol=1e-5)


def test_screen_names_missing_feature_columns_before_any_cluster(column_model, library,
                                                                 tmp_path):
    model, frame = column_model
    out, bad_scheduler = tmp_path / "o", ["--scheduler", "tcp://127.0.0.1:1"]
    without = tmp_path / "without.csv"
    frame[["smiles"]].to_csv(without, index=False)
    with pytest.raises(ValueError, match=r"feature columns of the model 'logp_guess' not "
                                         r"found in .*without.csv"):
        main(["screen", str(model), str(without), "--out", str(out), *bad_scheduler])
    with pytest.raises(ValueError, match=r"'logp_guess' not found in .*lib.smi"):
        main(["screen", str(model), str(library), "--out", str(out), *bad_scheduler])
    with pytest.raises(ValueError, match=r"--feature-columns 'xlogp' not found"):
        main(["screen", str(model), str(without), "--out", str(out), "--feature-columns",
              "xlogp", *bad_scheduler])
    with pytest.raises(ValueError, match=r"names 2 column\(s\) .* the model reads 1"):
        main(["screen", str(model), str(without), "--out", str(out), "--feature-columns",
              "a", "b", *bad_scheduler])
    assert not out.exists()


def test_a_feature_cell_that_is_no_number_names_its_file_and_chunk(column_model, tmp_path):
    from exlm_chem.screening.manifest import model_sha256
    from exlm_chem.screening.worker import ModelSpec, PartTask, run_part

    model, _ = column_model
    spec = ModelSpec(str(model), model_sha256(model), "predict", "cpu", "bos", None, 256)
    cells = np.array([["1.5"], ["high"]], dtype=object)  # as a CSV is read: text
    task = PartTask(str(tmp_path), "part-0.parquet", "/lib/x.csv", 300, ["CCO", "CCN"],
                    "run0", cells)
    with pytest.raises(ValueError, match=r"/lib/x.csv, the chunk from data row 300 .*"
                                         r"'logp_guess' holds a value that is not a number "
                                         r"at row 1: 'high'"):
        run_part(spec, task)
    assert not list(tmp_path.iterdir())  # no part for a failed chunk
