"""chemprop as a benchmark row, on a tiny BBBP/ESOL subset (seconds, not minutes).

Skipped only where chemprop is not installed (it is in the baselines and dev extras,
so CI runs it)."""

from __future__ import annotations

import importlib
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import TaskData

chemprop = pytest.importorskip("chemprop", reason="chemprop v2 is not installed "
                               "(pip install 'exlm_chem[baselines]')")

from exlm_chem.benchmark.chemprop_method import (  # noqa: E402
    ChempropSettings,
    chemprop_method,
)
from exlm_chem.benchmark.methods import build_methods  # noqa: E402

module = importlib.import_module("exlm_chem.benchmark.chemprop_method")
state_module = importlib.import_module("exlm_chem.benchmark.chemprop_state")


def _subset(name: str, n: int, task_type: str, tasks: int = 1) -> TaskData:
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet(name)
    labels = np.asarray(data.labels[:n, :tasks], dtype=np.float64)
    rows = np.arange(n)
    return TaskData(name, data.smiles[:n], labels, rows[: n - 17], rows[n - 17 : n - 8],
                    rows[n - 8 :], data.sha256, task_type)


def test_multitask_classification_with_missing_labels_is_reproducible() -> None:
    data = _subset("tox21", 81, "classification", tasks=3)
    assert np.isnan(data.labels[data.train]).any()  # chemprop masks these itself
    out = chemprop_method(data, seed=0, budget=Budget(max_epochs=2))
    assert out.test_scores.shape == (8, 3)  # a last batch of one is still predicted
    assert ((out.test_scores > 0) & (out.test_scores < 1)).all()
    assert out.epochs == 2 and out.best_epoch in (1, 2) and not out.stopped_early
    assert out.settings["chemprop_version"] == chemprop.__version__
    assert out.settings["depth"] == 3 and out.settings["epochs"] == 50
    again = chemprop_method(data, seed=0, budget=Budget(max_epochs=2))
    np.testing.assert_allclose(again.test_scores, out.test_scores, rtol=1e-6)
    other = chemprop_method(data, seed=1, budget=Budget(max_epochs=2))
    assert not np.allclose(other.test_scores, out.test_scores)


def test_regression_predicts_in_label_units() -> None:
    data = _subset("esol", 65, "regression")
    out = chemprop_method(data, seed=0, budget=Budget(max_epochs=3))
    assert out.test_scores.shape == (8, 1) and np.isfinite(out.test_scores).all()
    mean, spread = data.labels[data.train].mean(), data.labels[data.train].std()
    # unscaled: near the training labels' mean (a standardised output would sit near 0)
    assert abs(out.test_scores.mean() - mean) < 1.5 * spread
    assert abs(mean) > 1.5  # ESOL's log-solubilities: the check above can fail
    # the kept epoch's validation predictions, also unscaled, for conformal calibration
    assert out.valid_scores.shape == (9, 1) and np.isfinite(out.valid_scores).all()
    assert abs(out.valid_scores.mean() - mean) < 1.5 * spread


def test_a_split_without_a_valid_part_draws_chemprops_own(monkeypatch) -> None:
    data = _subset("esol", 65, "regression")
    data = data._replace(train=np.concatenate([data.train, data.valid]),
                         valid=np.zeros(0, np.int64))  # as --split cluster gives it
    seen = []
    real = module._dataset
    monkeypatch.setattr(module, "_dataset",
                        lambda smiles, labels, rows, x_d: seen.append(rows) or real(
                            smiles, labels, rows, x_d))
    out = chemprop_method(data, seed=0, budget=Budget(max_epochs=2))
    train, valid, test = seen
    assert len(valid) == round(module.OWN_VALID_SHARE * 57) == 6
    assert sorted([*train, *valid]) == list(data.train) and list(test) == list(data.test)
    assert out.valid_scores is None  # not the suite's part: nothing to report on it
    assert out.settings["own_valid"] == "random 6 of the train part"
    assert out.test_scores.shape == (8, 1) and np.isfinite(out.test_scores).all()
    np.testing.assert_array_equal(module.own_valid(data, 0).valid, valid)  # seeded
    assert not np.array_equal(module.own_valid(data, 1).valid, valid)


def test_row_label_and_protocol_carry_the_version() -> None:
    (spec,) = build_methods(["chemprop"], None, None, "finetune",
                            budget=Budget(max_epochs=20))
    assert spec.label == f"chemprop {chemprop.__version__} [<=20 ep]"
    assert spec.uses_budget and spec.mode == "supervised"
    _, settings = spec.protocol("bace", Budget(max_epochs=20))
    assert settings["chemprop_version"] == chemprop.__version__


def test_chemprop_rows_get_the_state_folder(tmp_path: Path) -> None:
    specs = build_methods(["chemprop", "chemprop_rdkit2d"], None, None, "finetune",
                          chemprop_state=tmp_path)
    assert [s.run.keywords["state_dir"] for s in specs] == [tmp_path, tmp_path]


class _Killed(Exception):
    """Stands for a session cut off right after a state file was written."""


def _run_until_killed(monkeypatch: pytest.MonkeyPatch, data: TaskData, budget: Budget,
                      state_dir: Path, epoch: int) -> None:
    """Run a cell that is cut off right after writing its state of ``epoch``."""
    write = state_module.CellState.write

    def write_then_die(self, trainer) -> None:
        write(self, trainer)
        if trainer.current_epoch + 1 == epoch:
            raise _Killed(epoch)

    with monkeypatch.context() as patch:
        patch.setattr(state_module.CellState, "write", write_then_die)
        with pytest.raises(_Killed):
            chemprop_method(data, 0, budget, settings=SMALL_BATCHES, state_dir=state_dir)


#: 4 training batches an epoch, so that a resumed epoch drawn in epoch 1's order would
#: change the scores
SMALL_BATCHES = ChempropSettings(batch_size=16)


@pytest.mark.parametrize(("task", "killed_after"),
                         [("tox21", 2), ("tox21", 3), ("esol", 1)])
def test_a_killed_cell_resumes_to_the_uninterrupted_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        task: str, killed_after: int) -> None:
    data = (_subset("tox21", 81, "classification", tasks=3) if task == "tox21"
            else _subset("esol", 65, "regression"))
    budget = Budget(max_epochs=3)
    whole = chemprop_method(data, 0, budget, settings=SMALL_BATCHES)
    _run_until_killed(monkeypatch, data, budget, tmp_path, killed_after)
    (state,) = tmp_path.iterdir()  # and no temporary file beside it
    assert state.name.startswith(f"{task}_seed0_plain_") and state.suffix == ".ckpt"
    # the resume is logged by chemprop_method, each saved epoch by chemprop_state
    with caplog.at_level(logging.INFO, logger="exlm_chem.benchmark"):
        resumed = chemprop_method(data, 0, budget, settings=SMALL_BATCHES, state_dir=tmp_path)
    assert f"resumed after epoch {killed_after} of 3 from {state}" in caplog.text
    assert ("epoch 3/3 saved" in caplog.text) == (killed_after < 3)
    np.testing.assert_array_equal(resumed.test_scores, whole.test_scores)
    if whole.valid_scores is not None:
        np.testing.assert_array_equal(resumed.valid_scores, whole.valid_scores)
    assert (resumed.epochs, resumed.best_epoch) == (whole.epochs, whole.best_epoch)
    assert list(tmp_path.iterdir()) == []  # the cell is scored: its state goes


def test_a_state_file_of_another_split_is_refused_not_overwritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _subset("esol", 65, "regression")
    other = data._replace(valid=data.test, test=data.valid)  # same rows, another split
    budget = Budget(max_epochs=2)
    _run_until_killed(monkeypatch, data, budget, tmp_path, 1)
    (mine,) = tmp_path.iterdir()
    _run_until_killed(monkeypatch, other, budget, tmp_path, 1)
    (theirs,) = set(tmp_path.iterdir()) - {mine}  # no collision: the name has a hash
    shutil.copyfile(mine, theirs)  # as if the split had changed under a kept file
    content = theirs.read_bytes()
    with pytest.raises(ValueError, match=f"{theirs}: .*differs in split_sha256.*delete"):
        chemprop_method(other, 0, budget, settings=SMALL_BATCHES, state_dir=tmp_path)
    assert theirs.read_bytes() == content and mine.is_file()


def test_a_failed_write_keeps_the_last_epoch_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _subset("esol", 65, "regression")
    budget = Budget(max_epochs=3)
    _run_until_killed(monkeypatch, data, budget, tmp_path, 1)
    (state,) = tmp_path.iterdir()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(module.os, "fsync", disk_full)  # epoch 2's temporary file is written
        with pytest.raises(OSError, match="No space"):
            chemprop_method(data, 0, budget, settings=SMALL_BATCHES, state_dir=tmp_path)
    assert list(tmp_path.iterdir()) == [state]  # the temporary file is gone
    assert state_module._read_state(state)[1] == 1  # still epoch 1's state, readable
