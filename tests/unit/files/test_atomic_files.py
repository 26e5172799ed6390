"""Atomic writes: all or nothing, and the usual permissions (0666 minus the umask)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exlm_chem.files.atomic_files import atomic_path, current_umask, default_file_mode
from exlm_chem.files.safe_write import atomic_directory, write_json_atomic


@pytest.fixture
def umask_027():
    previous = os.umask(0o027)
    yield
    os.umask(previous)


def test_umask_is_read_without_changing_it(umask_027):
    assert current_umask() == 0o027
    assert current_umask() == 0o027
    assert default_file_mode() == 0o640


def test_atomic_path_gives_the_usual_mode(tmp_path: Path, umask_027):
    target = tmp_path / "sub" / "out.csv"  # the folder is created
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.stat().st_mode & 0o777 == 0o640
        tmp.write_text("a,b\n")
    assert target.read_text() == "a,b\n" and target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["out.csv"]


def test_atomic_path_failure_keeps_the_old_file(tmp_path: Path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="disk full"), atomic_path(target, durable=True) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_checkpoint_files_and_folders_respect_the_umask(tmp_path: Path, umask_027):
    with atomic_directory(tmp_path / "ckpt") as tmp:
        write_json_atomic(tmp / "config.json", {"d": 64})
        (tmp / "vocab.txt").write_text("C\n")
    ckpt = tmp_path / "ckpt"
    assert ckpt.stat().st_mode & 0o777 == 0o750
    assert {p.name: p.stat().st_mode & 0o777 for p in ckpt.iterdir()} == {
        "config.json": 0o640, "vocab.txt": 0o640}
