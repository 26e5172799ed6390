"""The command line reports every error of ours as one line with exit code 2.

Tracebacks are kept for bugs and for ``exlm-chem --debug``.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from reliability_helpers import CLI, cli_env

from exlm_chem.cli import main
from exlm_chem.cli.errors import run_console
from exlm_chem.cli.fit import FitCommand
from exlm_chem.errors import CheckpointError


def _one_line_error(capsys, argv) -> str:
    code = run_console(main, argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("exlm-chem: error: "), err
    return err


@pytest.fixture
def smiles_csv(tmp_path, bbbp_rows):
    X, y = bbbp_rows
    path = tmp_path / "mols.csv"
    path.write_text("smiles,p_np\n" + "".join(f"{s},{v}\n" for s, v in zip(X, y, strict=True)))
    return path


def test_damaged_fitted_model(capsys, saved_classifier, model_copy, smiles_csv, tmp_path):
    model = model_copy(saved_classifier)
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    err = _one_line_error(capsys, ["predict", str(model), str(smiles_csv), "--out",
                                   str(tmp_path / "p.csv"), "--no-progress"])
    assert f"{weights} is truncated or corrupt" in err
    (model / "metadata.json").write_text("[]")
    err = _one_line_error(capsys, ["predict", str(model), str(smiles_csv), "--out",
                                   str(tmp_path / "p.csv"), "--no-progress"])
    assert f"{model / 'metadata.json'} must hold a JSON object" in err
    assert not (tmp_path / "p.csv").exists()


def test_mismatched_checkpoint(capsys, tiny_checkpoint, model_copy, smiles_csv, tmp_path):
    checkpoint = model_copy(tiny_checkpoint)
    vocab = checkpoint / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in vocab.read_text().splitlines()[:-1]))
    err = _one_line_error(capsys, ["embed", str(smiles_csv), "--model", str(checkpoint),
                                   "--out", str(tmp_path / "e.npy"), "--no-progress"])
    assert f"{vocab} has" in err and "vocab_size=" in err


def test_fitted_model_where_a_checkpoint_is_expected(capsys, saved_classifier, smiles_csv,
                                                     tmp_path):
    err = _one_line_error(capsys, ["embed", str(smiles_csv), "--model", str(saved_classifier),
                                   "--out", str(tmp_path / "e.npy"), "--no-progress"])
    assert "holds a fitted ExLMMoleculeClassifier" in err and "not a pre-trained" in err


def test_corrupt_dataset(capsys, tmp_path, moleculenet_dir, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    raw = (moleculenet_dir / "bbbp.csv.gz").read_bytes()
    (data / "bbbp.csv.gz").write_bytes(raw[: len(raw) // 3])
    monkeypatch.setenv("EXLM_CHEM_DATA", str(data))
    err = _one_line_error(capsys, ["data", "summary", "--datasets", "bbbp"])
    assert f"{data / 'bbbp.csv.gz'} cannot be decompressed" in err


def test_many_bad_rows_still_one_line(capsys, tmp_path, tiny_checkpoint):
    path = tmp_path / "bad.csv"
    path.write_text("smiles,y\nCCO,1\nC1CC,0\nnot_a_smiles,1\nCCN,0\n")
    err = _one_line_error(capsys, ["fit", str(path), "--target-columns", "y", "--out",
                                   str(tmp_path / "m"), "--pretrained", str(tiny_checkpoint)])
    assert "2 invalid SMILES" in err and "row 1: 'C1CC'" in err and "row 2:" in err


def test_debug_shows_the_traceback_and_bugs_keep_theirs(capsys, saved_classifier, model_copy,
                                                       smiles_csv, tmp_path, monkeypatch):
    model = model_copy(saved_classifier)
    (model / "metadata.json").write_text("{")
    argv = ["predict", str(model), str(smiles_csv), "--out", str(tmp_path / "p.csv")]
    with pytest.raises(CheckpointError, match="is not valid JSON"):
        run_console(main, ["--debug", *argv])

    def bug(args):
        raise KeyError("a bug, not a user error")

    monkeypatch.setattr(FitCommand, "run", classmethod(lambda cls, args: bug(args)))
    with pytest.raises(KeyError):
        run_console(main, ["fit", str(smiles_csv), "--target-columns", "p_np", "--out",
                           str(tmp_path / "m")])


def test_installed_entry_point(tmp_path, tiny_checkpoint, model_copy, smiles_csv):
    model = model_copy(tiny_checkpoint)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "k_states": 4}))
    argv = ["embed", str(smiles_csv), "--model", str(model), "--out", str(tmp_path / "e.npy")]
    quiet = subprocess.run([*CLI, *argv], env=cli_env(), capture_output=True, text=True,
                           timeout=300)
    assert quiet.returncode == 2
    assert quiet.stderr == (f"exlm-chem: error: {model / 'config.json'} says k_states=4 but "
                            f"{model / 'model.safetensors'} was saved with k_states='2'\n")
    loud = subprocess.run([*CLI, "--debug", *argv], env=cli_env(), capture_output=True,
                          text=True, timeout=300)
    assert loud.returncode == 1 and "Traceback" in loud.stderr
    assert "exlm_chem.errors.CheckpointError" in loud.stderr
