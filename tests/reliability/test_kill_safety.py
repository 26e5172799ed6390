"""SIGKILL in the middle of a save or an embedding: the previous model or output survives
whole, nothing of the user's is lost, and the next run leaves no debris."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from reliability_helpers import CLI, cli_env, debris

from exlm_chem.cli import main
from exlm_chem.model.checkpoint import load_checkpoint
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

CHILD = [sys.executable, str(Path(__file__).with_name("kill_child.py"))]
MODES = ["in_body", "before_swap", "after_swap", "between_renames"]


def _snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir()}


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(args, env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def _kill_at(proc: subprocess.Popen, marker: str) -> None:
    """Read the child's output up to the line ``marker``, then SIGKILL it."""
    for line in proc.stdout:
        if line.strip() == marker:
            break
    else:
        raise AssertionError(f"the child ended (code {proc.wait()}) before {marker!r}")
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


class SaveServer:
    """``kill_child.py serve``: forks one saver per kill, so each costs no start-up."""

    def __init__(self, kind: str, source: Path) -> None:
        self.proc = subprocess.Popen([*CHILD, "serve", kind, str(source)], env=cli_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.saver = 0
        self._until(lambda line: line == "READY")

    def _until(self, done) -> None:
        for line in self.proc.stdout:
            if done(line.strip()):
                return
        raise AssertionError(f"the save server ended (code {self.proc.wait()})")

    def kill_saver(self, mode: str, target: Path, marker: str = "PAUSE",
                   delay: float = 0.0) -> int:
        """Start a saver, SIGKILL it once it printed ``marker`` (plus ``delay`` s)."""
        self.proc.stdin.write(f"{mode} {target}\n")
        self.proc.stdin.flush()
        seen: dict[str, int] = {}

        def ready(line: str) -> bool:  # the saver may print before the server names it
            if line == "DEAD":  # it failed before the marker (its error went to stderr)
                raise AssertionError(f"the saver ended before printing {marker!r}")
            if line.startswith("CHILD "):
                seen["pid"] = self.saver = int(line.split()[1])
            seen["marker"] = seen.get("marker", 0) or int(line == marker)
            return "pid" in seen and seen["marker"]

        self._until(ready)
        time.sleep(delay)
        os.kill(seen["pid"], signal.SIGKILL)
        self._until(lambda line: line == "DEAD")
        return seen["pid"]

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # a saver a failed test left running
            os.kill(self.saver, signal.SIGKILL)
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def servers(saved_classifier, tiny_checkpoint):
    started: dict[str, SaveServer] = {}

    def get(kind: str) -> SaveServer:
        if kind not in started:
            source = saved_classifier if kind == "estimator" else tiny_checkpoint
            started[kind] = SaveServer(kind, source)
        return started[kind]

    yield get
    for server in started.values():
        server.close()


def _project(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    """A user's folder holding notes and a saved model (a copy of ``source``)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    target = Path(shutil.copytree(source, folder / "model"))
    return folder, target


def _load(kind: str, target: Path):
    return ExLMMoleculeClassifier.load(target) if kind == "estimator" else \
        load_checkpoint(target)


def _save_again(kind: str, target: Path) -> None:
    """An ordinary save by a later run (it sweeps what the killed one left)."""
    if kind == "estimator":
        ExLMMoleculeClassifier.load(target).save(target)
        return
    from exlm_chem.model.checkpoint import save_checkpoint

    model, config, _ = load_checkpoint(target)
    save_checkpoint(target, model, config, (target / "vocab.txt").read_text().splitlines())


@pytest.mark.parametrize("kind", ["estimator", "checkpoint"])
@pytest.mark.parametrize("mode", MODES)
def test_kill_at_each_step_of_a_save(kind, mode, servers, saved_classifier, tiny_checkpoint,
                                     tmp_path):
    folder, target = _project(tmp_path, saved_classifier if kind == "estimator"
                              else tiny_checkpoint)
    before = _snapshot(target)
    pid = servers(kind).kill_saver(mode, target)

    left = debris(folder)
    assert left and all(f".{pid}-" in name for name in left)  # named by the dead writer
    _load(kind, target)  # whole: the previous version, or after the swap the new one
    if mode == "after_swap":
        assert _snapshot(target) != before
    else:  # between the renames the loader put the previous version back first
        assert _snapshot(target) == before
    _save_again(kind, target)
    assert debris(folder) == [] and sorted(p.name for p in folder.iterdir()) == [
        "model", "notes.txt"]
    assert (folder / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("kind", ["estimator", "checkpoint"])
def test_kill_at_random_moments_while_saving(kind, servers, saved_classifier, tiny_checkpoint,
                                             tmp_path):
    folder, target = _project(tmp_path, saved_classifier if kind == "estimator"
                              else tiny_checkpoint)
    rng = random.Random(0)
    for _ in range(10):
        servers(kind).kill_saver("loop", target, f"SAVING {rng.randint(1, 3)}",
                                 delay=rng.uniform(0.0, 0.05))
        _load(kind, target)  # whole after every kill
    _save_again(kind, target)
    assert debris(folder) == [] and (folder / "notes.txt").read_text() == "mine"


@pytest.fixture
def molecules(tmp_path, bbbp_rows) -> Path:
    X, _ = bbbp_rows
    path = tmp_path / "mols.csv"
    pd.DataFrame({"smiles": X * 4}).to_csv(path, index=False)  # 128 rows
    return path


def _embed_argv(molecules: Path, checkpoint: Path, out: Path) -> list[str]:
    return ["embed", str(molecules), "--model", str(checkpoint), "--out", str(out),
            "--chunk-size", "16", "--batch-size", "16", "--device", "cpu", "--no-progress"]


def test_kill_during_embed_keeps_the_previous_output(molecules, tiny_checkpoint, tmp_path):
    out = tmp_path / "emb.parquet"
    assert main(_embed_argv(molecules, tiny_checkpoint, out)) == 0
    previous = out.read_bytes()

    proc = _start([*CHILD, "embed", *_embed_argv(molecules, tiny_checkpoint, out)])
    _kill_at(proc, "PAUSE")  # two of eight chunks written
    assert out.read_bytes() == previous
    assert [n.split(".tmp-")[0] for n in debris(tmp_path)] == [".emb.parquet"]
    assert f".{proc.pid}-" in debris(tmp_path)[0]

    assert main(_embed_argv(molecules, tiny_checkpoint, out)) == 0  # sweeps, then replaces
    assert pd.read_parquet(out)["row"].tolist() == list(range(128))
    assert debris(tmp_path) == []


def test_kill_of_the_real_embed_command(bbbp_rows, tiny_checkpoint, tmp_path):
    X, _ = bbbp_rows
    big = tmp_path / "big.csv"
    pd.DataFrame({"smiles": X * 60}).to_csv(big, index=False)  # 1,920 rows: seconds of work
    out = tmp_path / "emb.npy"
    out.write_bytes(b"the previous output")
    proc = subprocess.Popen([*CLI, *_embed_argv(big, tiny_checkpoint, out)], env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    # the output's temporary file appears once embedding has started; the empty directory
    # that check_output_file creates and removes before that is not it
    while (not [n for n in debris(tmp_path) if (tmp_path / n).is_file()]
           and proc.poll() is None and time.monotonic() - started < 120):
        time.sleep(0.01)
    assert proc.poll() is None, "the embedding ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert out.read_bytes() == b"the previous output"
    assert len(debris(tmp_path)) == 1
    assert main(_embed_argv(tmp_path / "big.csv", tiny_checkpoint, out)) == 0
    assert debris(tmp_path) == [] and len(np.load(out)) == 1920
