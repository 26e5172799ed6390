"""Saving never deletes what it did not write, and never leaves debris behind."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import pytest
from reliability_helpers import CLI, cli_env, debris

from exlm_chem.cli import main
from exlm_chem.cli.errors import run_console
from exlm_chem.errors import OutputPathError
from exlm_chem.files import debris as debris_names
from exlm_chem.files import safe_write
from exlm_chem.model.checkpoint import load_checkpoint, save_checkpoint
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier


def _user_folder(path):
    """A folder a user cares about: a note and a subfolder that have nothing to do with us."""
    path.mkdir()
    (path / "important_notes.txt").write_text("do not lose me")
    (path / "sub").mkdir()
    (path / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return {p.relative_to(path): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def _snapshot(path):
    return {p.relative_to(path): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_save_refuses_a_folder_it_did_not_write(fitted_classifier, tmp_path):
    target = tmp_path / "results"
    before = _user_folder(target)
    with pytest.raises(OutputPathError, match=r"results already exists and is not a model "
                                              r"saved by exlm_chem.*important_notes\.txt"):
        fitted_classifier.save(target)
    assert _snapshot(target) == before
    assert debris(tmp_path) == []


def test_fit_cli_refuses_the_folder_before_training(bbbp_rows, tmp_path, capsys):
    X, y = bbbp_rows
    train = tmp_path / "train.csv"
    train.write_text("smiles,p_np\n" + "".join(f"{s},{v}\n" for s, v in zip(X, y, strict=True)))
    target = tmp_path / "out"
    before = _user_folder(target)
    # a pretrained path that does not exist: had training started, that would be the error
    code = run_console(main, ["fit", str(train), "--target-columns", "p_np", "--out",
                              str(target), "--pretrained", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("exlm-chem: error: ")
    assert str(target) in err and "important_notes.txt" in err and "nowhere" not in err
    assert _snapshot(target) == before


@pytest.mark.parametrize("where", [".", ".."])
def test_save_into_the_working_directory_is_refused_cleanly(fitted_classifier, tmp_path,
                                                            monkeypatch, where):
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(OutputPathError, match="current directory"):
        fitted_classifier.save(where)
    assert list(cwd.iterdir()) == [] and debris(tmp_path) == []


def _drop_root_privileges() -> list[str]:
    """A command prefix under which root obeys file permissions (CI may run as root)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_fit_into_a_read_only_folder_fails_before_training(bbbp_rows, tmp_path):
    X, y = bbbp_rows
    train = tmp_path / "train.csv"
    train.write_text("smiles,p_np\n" + "".join(f"{s},{v}\n" for s, v in zip(X, y, strict=True)))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        cmd = [*_drop_root_privileges(), *CLI, "fit", str(train), "--target-columns", "p_np",
               "--out", str(locked / "model"), "--pretrained", str(tmp_path / "nowhere")]
        proc = subprocess.run(cmd, env=cli_env(), capture_output=True, text=True, timeout=300)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"cannot write {locked / 'model'}" in proc.stderr and "not writable" in proc.stderr
    assert list(locked.iterdir()) == []


def test_replacing_a_saved_model_is_atomic_without_debris(fitted_classifier, bbbp_rows,
                                                          tmp_path):
    X, _ = bbbp_rows
    target = fitted_classifier.save(tmp_path / "clf")
    first = (target / "model.safetensors").read_bytes()
    again = ExLMMoleculeClassifier.load(target)
    again.model_.head.out.bias.data += 1.0  # a different model, saved over the first
    again.save(target)
    assert (target / "model.safetensors").read_bytes() != first
    assert ExLMMoleculeClassifier.load(target).predict_proba(X[:4]).shape == (4, 2)
    assert debris(tmp_path) == [] and [p.name for p in tmp_path.iterdir()] == ["clf"]


def test_files_get_the_umask_permissions(fitted_classifier, tmp_path):
    old = os.umask(0o027)
    try:
        target = fitted_classifier.save(tmp_path / "clf")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in target.iterdir()}
    assert modes == dict.fromkeys(modes, 0o640) and "model.safetensors" in modes
    assert target.stat().st_mode & 0o777 == 0o750


def test_one_kind_is_never_saved_over_the_other(fitted_classifier, tiny_checkpoint,
                                               model_copy):
    checkpoint = model_copy(tiny_checkpoint, "pretrained")
    before = _snapshot(checkpoint)
    with pytest.raises(OutputPathError, match="holds a pre-trained checkpoint"):
        fitted_classifier.save(checkpoint)
    assert _snapshot(checkpoint) == before

    estimator = fitted_classifier.save(checkpoint.parent / "clf")
    model, config, _ = load_checkpoint(tiny_checkpoint)
    tokens = (tiny_checkpoint / "vocab.txt").read_text().splitlines()
    with pytest.raises(OutputPathError, match="holds a fitted ExLMMoleculeClassifier"):
        save_checkpoint(estimator, model, config, tokens)


def test_a_saved_model_with_foreign_files_is_not_replaced(fitted_classifier, tmp_path):
    target = fitted_classifier.save(tmp_path / "clf")
    (target / "MODEL_CARD.md").write_text("a card: written by our scripts, replaceable")
    fitted_classifier.save(target)
    (target / "my_plot.png").write_bytes(b"\x89PNG")
    with pytest.raises(OutputPathError, match=r"files exlm_chem did not write \(my_plot\.png\)"):
        fitted_classifier.save(target)
    assert (target / "my_plot.png").read_bytes() == b"\x89PNG"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_debris_of_a_killed_save_is_swept_and_a_set_aside_model_restored(
        fitted_classifier, tmp_path, caplog):
    target = fitted_classifier.save(tmp_path / "clf")
    saved = _snapshot(target)
    pid = _dead_pid()
    # what a save killed between its two renames leaves: the model set aside, none in place
    aside = tmp_path / f".clf.old-{debris_names.HOST}.{pid}-abcdefgh"
    aside.mkdir()
    os.replace(target, aside / "clf")
    half = tmp_path / f".clf.tmp-{debris_names.HOST}.{pid}-ijklmnop"
    half.mkdir()
    (half / "config.json").write_text("{")
    live = tmp_path / f".clf.tmp-{debris_names.HOST}.{os.getppid()}-qrstuvwx"  # a live writer
    live.mkdir()
    with caplog.at_level(logging.INFO, logger="exlm_chem.files.safe_write"):
        kept = safe_write.sweep_debris(target)
    assert kept == [live] and live.name in caplog.text and "restored" in caplog.text
    assert _snapshot(target) == saved
    assert debris(tmp_path) == [live.name]


def test_embed_and_predict_refuse_an_unusable_out_before_work(saved_classifier,
                                                              tiny_checkpoint, tmp_path,
                                                              capsys):
    data = tmp_path / "in.csv"
    data.write_text("smiles\nCCO\n")
    folder = tmp_path / "out.csv"
    folder.mkdir()
    for argv in (["embed", str(data), "--model", str(tmp_path / "nowhere"), "--out",
                  str(folder)],
                 ["predict", str(tmp_path / "nowhere"), str(data), "--out", str(folder)]):
        assert run_console(main, argv) == 2
        err = capsys.readouterr().err
        assert f"{folder} is a directory" in err and "nowhere" not in err
