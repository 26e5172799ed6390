"""``exlm-chem embed``, ``fit`` and ``predict`` on real BBBP rows mixed with bad ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.cli import main
from exlm_chem.embedding import embed
from exlm_chem.files.safe_write import default_file_mode

pytestmark = pytest.mark.usefixtures("few_catboost_trees")

BAD_ROWS = {  # data row -> SMILES that must come out invalid
    2: "not_a_smiles",
    5: None,  # an empty cell
    11: "C1CC",  # unclosed ring
    17: "C" * 2500,  # over the 2000-character limit
}
N_ROWS = 45
TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(scope="module")
def bbbp(moleculenet_dir) -> pd.DataFrame:
    return pd.read_csv(moleculenet_dir / "bbbp.csv.gz")


@pytest.fixture(scope="module")
def input_csv(bbbp, tmp_path_factory) -> Path:
    """45 BBBP rows (num, name, p_np, smiles) with four of them replaced by bad SMILES."""
    frame = bbbp.iloc[100 : 100 + N_ROWS].reset_index(drop=True).copy()
    for row, value in BAD_ROWS.items():
        frame.loc[row, "smiles"] = value
    path = tmp_path_factory.mktemp("embed_input") / "molecules.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def expected(input_csv, tiny_checkpoint):
    """What the Python API says for the same column (empty cell -> empty string)."""
    smiles = pd.read_csv(input_csv, dtype={"smiles": str})["smiles"].fillna("").tolist()
    result = embed(smiles, model=str(tiny_checkpoint), device="cpu")
    assert (~result.valid).sum() >= len(BAD_ROWS)
    assert not result.valid[list(BAD_ROWS)].any()
    return result


def _embed_args(input_csv, checkpoint, out, *extra):
    return ["embed", str(input_csv), "--smiles-column", "smiles", "--model", str(checkpoint),
            "--out", str(out), "--chunk-size", "16", "--batch-size", "8", "--device", "cpu",
            "--no-progress", *extra]


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".npy"])
def test_embed_writes_one_row_per_input_row(input_csv, tiny_checkpoint, expected, tmp_path,
                                            suffix, capsys):
    out = tmp_path / f"emb{suffix}"
    keep = [] if suffix == ".npy" else ["--keep-columns", "name", "smiles"]
    assert main(_embed_args(input_csv, tiny_checkpoint, out, *keep)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"embed: read {N_ROWS} rows from {input_csv}; wrote {N_ROWS} rows to {out}; "
        "4 invalid (1 SMILES Parse Error: syntax error, 1 empty SMILES, "
        "1 SMILES Parse Error: unclosed ring, 1 too long)")
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary left
    assert out.stat().st_mode & 0o777 == default_file_mode()  # not the temporary's 0600
    if suffix == ".npy":
        X = np.load(out)
        valid = ~np.isnan(X).any(axis=1)
    else:
        table = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
        assert len(table) == N_ROWS
        assert table["row"].tolist() == list(range(N_ROWS))
        source = pd.read_csv(input_csv, dtype=str)
        assert table["name"].astype(str).tolist() == source["name"].astype(str).tolist()
        assert table.loc[2, "smiles"] == "not_a_smiles"
        # RDKit's own words, not a generic "could not parse"
        assert table.loc[2, "invalid_reason"].startswith(
            "SMILES Parse Error: syntax error while parsing: not_a_smiles")
        assert table.loc[11, "invalid_reason"] == (
            "SMILES Parse Error: unclosed ring for input: 'C1CC'")
        assert table.loc[5, "invalid_reason"] == "empty SMILES"
        assert "too long" in table.loc[17, "invalid_reason"]
        valid = table["valid"].to_numpy(dtype=bool)
        X = table[[f"emb_{j}" for j in range(64)]].to_numpy()
    assert X.shape == (N_ROWS, 64)
    np.testing.assert_array_equal(valid, expected.valid)
    assert np.isnan(X[~valid]).all() and np.isfinite(X[valid]).all()
    np.testing.assert_allclose(X[valid], expected.embeddings[valid], **TOL)


def test_embed_missing_column_is_a_clear_error(input_csv, tiny_checkpoint, tmp_path):
    out = tmp_path / "emb.parquet"
    args = _embed_args(input_csv, tiny_checkpoint, out)
    args[args.index("smiles")] = "SMILES"
    with pytest.raises(ValueError, match=r"'SMILES' not found.*num, name, p_np, smiles"):
        main(args)
    with pytest.raises(ValueError, match="must end in one of"):
        main(_embed_args(input_csv, tiny_checkpoint, tmp_path / "emb.txt"))
    with pytest.raises(ValueError, match="needs a table output"):
        main(_embed_args(input_csv, tiny_checkpoint, tmp_path / "e.npy", "--keep-columns", "name"))
    assert list(tmp_path.iterdir()) == []


def test_embed_failure_leaves_the_previous_output(input_csv, tiny_checkpoint, tmp_path):
    out = tmp_path / "emb.csv"
    out.write_text("previous\n")
    with pytest.raises(FileNotFoundError):
        main(_embed_args(input_csv, tmp_path / "no_model", out))
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.csv"]


def test_console_script_embed(input_csv, tiny_checkpoint, expected, tmp_path):
    script = Path(sys.executable).with_name("exlm-chem")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "exlm_chem.cli"]
    out = tmp_path / "emb.npy"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd + _embed_args(input_csv, tiny_checkpoint, out), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    X = np.load(out)
    np.testing.assert_array_equal(~np.isnan(X).any(axis=1), expected.valid)
    np.testing.assert_allclose(X[expected.valid], expected.embeddings[expected.valid], **TOL)


@pytest.fixture(scope="module")
def fitted(bbbp, tiny_checkpoint, tmp_path_factory) -> Path:
    """A classifier fine-tuned by the CLI on 200 real BBBP rows for 2 epochs."""
    folder = tmp_path_factory.mktemp("fit")
    train = folder / "train.csv"
    bbbp.iloc[:200].to_csv(train, index=False)
    model_dir = folder / "model"
    with pytest.warns(UserWarning, match="2 invalid SMILES left out"):  # BBBP's own bad rows
        assert main(["fit", str(train), "--smiles-column", "smiles", "--target-columns",
                     "p_np", "--out", str(model_dir), "--pretrained", str(tiny_checkpoint),
                     "--epochs", "2", "--batch-size", "32", "--lr", "1e-3",
                     "--random-state", "0", "--on-invalid", "drop", "--device", "cpu",
                     "--no-progress"]) == 0
    return model_dir


def test_fit_then_predict_writes_aligned_rows(fitted, input_csv, expected, tmp_path):
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    est = ExLMMoleculeClassifier.load(fitted)
    assert est.task_names_ == ["p_np"] and est.n_tasks_ == 1 and len(est.history_) == 2
    out = tmp_path / "pred.csv"
    assert main(["predict", str(fitted), str(input_csv), "--smiles-column", "smiles",
                 "--out", str(out), "--keep-columns", "name", "--chunk-size", "10",
                 "--no-progress"]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["row", "name", "valid", "invalid_reason", "p_np"]
    assert pred["row"].tolist() == list(range(N_ROWS))
    valid = pred["valid"].to_numpy(dtype=bool)
    np.testing.assert_array_equal(valid, expected.valid)
    p = pred["p_np"].to_numpy()
    assert np.isnan(p[~valid]).all()
    assert ((p[valid] > 0) & (p[valid] < 1)).all()
    smiles = pd.read_csv(input_csv, dtype={"smiles": str})["smiles"].fillna("").tolist()
    direct = est.predict_proba([smiles[i] for i in np.flatnonzero(valid)])[:, 0]
    np.testing.assert_allclose(p[valid], direct, rtol=1e-6)


def test_fit_regression_on_two_targets(bbbp, tiny_checkpoint, tmp_path):
    from rdkit import Chem
    from rdkit.Chem import Descriptors

    frame = bbbp.iloc[300:380][["smiles"]].copy()
    mols = [Chem.MolFromSmiles(s) for s in frame["smiles"]]
    frame = frame[[m is not None for m in mols]]
    mols = [m for m in mols if m is not None]
    frame["heavy_atoms"] = [m.GetNumHeavyAtoms() for m in mols]
    frame["mol_wt"] = [Descriptors.MolWt(m) for m in mols]
    frame.loc[frame.index[:5], "mol_wt"] = np.nan  # missing labels are allowed
    train = tmp_path / "reg.csv"
    frame.to_csv(train, index=False)
    model_dir = tmp_path / "reg_model"
    assert main(["fit", str(train), "--target-columns", "heavy_atoms", "mol_wt", "--task",
                 "regression", "--out", str(model_dir), "--pretrained", str(tiny_checkpoint),
                 "--epochs", "1", "--device", "cpu", "--no-progress"]) == 0
    out = tmp_path / "reg_pred.parquet"
    assert main(["predict", str(model_dir), str(train), "--out", str(out),
                 "--no-progress"]) == 0
    pred = pd.read_parquet(out)
    assert list(pred.columns) == ["row", "valid", "invalid_reason", "heavy_atoms", "mol_wt"]
    assert len(pred) == len(frame) and pred["valid"].all()
    assert np.isfinite(pred[["heavy_atoms", "mol_wt"]].to_numpy()).all()


def test_fit_errors_name_the_columns(bbbp, tiny_checkpoint, tmp_path):
    train = tmp_path / "train.csv"
    bbbp.iloc[:20].to_csv(train, index=False)
    with pytest.raises(ValueError, match=r"'pnp' not found.*num, name, p_np, smiles"):
        main(["fit", str(train), "--target-columns", "pnp", "--out", str(tmp_path / "m"),
              "--pretrained", str(tiny_checkpoint)])
    with pytest.raises(ValueError, match="non-numeric value at data row 0"):
        main(["fit", str(train), "--target-columns", "name", "--out", str(tmp_path / "m"),
              "--pretrained", str(tiny_checkpoint)])
    assert not (tmp_path / "m").exists()


def test_predict_refuses_a_pretrained_checkpoint(tiny_checkpoint, input_csv, tmp_path):
    with pytest.raises(ValueError, match="holds a pre-trained checkpoint, not a fitted estimator"):
        main(["predict", str(tiny_checkpoint), str(input_csv), "--out",
              str(tmp_path / "p.csv")])
    copy = tmp_path / "not_a_model"
    shutil.copytree(tiny_checkpoint, copy)
    (copy / "metadata.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"metadata\.json"):
        main(["predict", str(copy), str(input_csv), "--out", str(tmp_path / "p.csv")])


def test_predict_reads_parquet_and_smi_like_csv(fitted, input_csv, tmp_path):
    source = pd.read_csv(input_csv, dtype=str)
    as_parquet = tmp_path / "in.parquet"
    source.to_parquet(as_parquet, index=False)
    as_smi = tmp_path / "in.smi"
    valid_rows = source[source["smiles"].notna() & (source["smiles"].str.len() < 2000)]
    as_smi.write_text("".join(f"{s} {n}\n" for s, n in zip(valid_rows["smiles"],
                                                         valid_rows["name"], strict=True)))
    outputs = {}
    for name, path in (("csv", input_csv), ("parquet", as_parquet), ("smi", as_smi)):
        outputs[name] = tmp_path / f"pred_{name}.csv"
        assert main(["predict", str(fitted), str(path), "--out", str(outputs[name]),
                     "--keep-columns", "name", "--no-progress"]) == 0
    by_csv, by_parquet = pd.read_csv(outputs["csv"]), pd.read_csv(outputs["parquet"])
    pd.testing.assert_frame_equal(by_csv, by_parquet)
    by_smi = pd.read_csv(outputs["smi"])
    assert by_smi["name"].tolist() == valid_rows["name"].tolist()
    np.testing.assert_allclose(by_smi["p_np"].to_numpy(),
                               by_csv.loc[valid_rows.index, "p_np"].to_numpy(), rtol=1e-6)


def test_smi_blank_lines_are_invalid_rows_so_rows_are_line_numbers(fitted, tiny_checkpoint,
                                                                    tmp_path):
    # the same numbering as `screen` and the MoleculeNet loader: row i is line i + 1
    smi = tmp_path / "gaps.smi"
    smi.write_text("CCO a\n\nc1ccccc1O b\n   \nCCN c\n")
    out = tmp_path / "pred.csv"
    assert main(["predict", str(fitted), str(smi), "--out", str(out), "--keep-columns", "name",
                 "--no-progress"]) == 0
    pred = pd.read_csv(out)
    assert pred["row"].tolist() == [0, 1, 2, 3, 4]
    assert pred["valid"].tolist() == [True, False, True, False, True]
    assert pred["invalid_reason"].fillna("").tolist() == ["", "empty SMILES", "",
                                                          "empty SMILES", ""]
    assert pred["name"].fillna("").tolist() == ["a", "", "b", "", "c"]
    embedded = tmp_path / "emb.csv"
    assert main(_embed_args(smi, tiny_checkpoint, embedded)) == 0
    assert pd.read_csv(embedded)["valid"].tolist() == [True, False, True, False, True]


def test_predict_all_invalid_says_so_and_can_fail(fitted, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"smiles": ["C1CC", "not_a_smiles", "", "C(C)(C)(C)(C)C"]}).to_csv(
        bad, index=False)
    out = tmp_path / "pred.csv"
    assert main(["predict", str(fitted), str(bad), "--out", str(out), "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"predict: read 4 rows from {bad}; wrote 4 rows (p_np) to {out}; 4 invalid "
        "(1 SMILES Parse Error: unclosed ring, 1 SMILES Parse Error: syntax error, "
        "1 empty SMILES, 1 Explicit valence is greater than permitted)")
    assert main(["predict", str(fitted), str(bad), "--out", str(out), "--no-progress",
                 "--fail-on-invalid"]) == 1
    assert "4 of 4 rows are invalid (--fail-on-invalid)" in capsys.readouterr().err
    pred = pd.read_csv(out)  # still written, every row marked
    assert not pred["valid"].any() and pred["p_np"].isna().all()
    assert pred.loc[3, "invalid_reason"] == (
        "Explicit valence for atom # 0 C, 5, is greater than permitted")


def test_fit_prints_one_summary_line(bbbp, tiny_checkpoint, tmp_path, capsys):
    train = tmp_path / "train.csv"
    frame = bbbp.iloc[:40][["smiles", "p_np"]].copy()
    frame.loc[3, "smiles"] = "C1CC"
    frame.to_csv(train, index=False)
    args = ["fit", str(train), "--target-columns", "p_np", "--out", str(tmp_path / "m"),
            "--pretrained", str(tiny_checkpoint), "--epochs", "1", "--device", "cpu",
            "--no-progress", "--on-invalid", "drop"]
    with pytest.warns(UserWarning, match="1 invalid SMILES left out"):
        assert main(args) == 0
    line = capsys.readouterr().out.strip()
    assert "\n" not in line
    assert line.startswith(f"fit: read 40 rows from {train}; trained on 39 rows and saved "
                           f"ExLMMoleculeClassifier (1 task(s): p_np) to {tmp_path / 'm'}, "
                           "best epoch 1 (")
    assert line.endswith("; 1 invalid (1 SMILES Parse Error: unclosed ring)")
    with pytest.warns(UserWarning):
        assert main([*args, "--fail-on-invalid"]) == 1


def test_inputs_without_rows_are_clear_errors(tiny_checkpoint, tmp_path):
    header = tmp_path / "header.csv"
    header.write_text("smiles,p_np\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    fit = ["fit", "--target-columns", "p_np", "--out", str(tmp_path / "m"),
           "--pretrained", str(tiny_checkpoint)]
    with pytest.raises(ValueError, match=r"header\.csv has no data rows") as err:
        main([fit[0], str(header), *fit[1:]])
    assert "[0]" not in str(err.value)
    with pytest.raises(ValueError, match=r"empty\.csv is empty"):
        main([fit[0], str(empty), *fit[1:]])
    for path in (header, empty):
        with pytest.raises(ValueError, match=path.name.replace(".", r"\.")):
            main(_embed_args(path, tiny_checkpoint, tmp_path / "e.csv"))
    assert not (tmp_path / "m").exists() and not (tmp_path / "e.csv").exists()
