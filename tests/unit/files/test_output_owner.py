"""Which saved directories a save may replace: the names it writes are the names it owns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exlm_chem.files.output_owner import (
    ESTIMATOR_FORMAT,
    MEMBER_FILE,
    TREE_ARRAYS_FILE,
    TREE_ENCODER_FILE,
    TREE_FOREST_FILE,
    member_file,
    replace_refusal,
)


def _saved(path: Path, names: list[str]) -> Path:
    path.mkdir()
    (path / "metadata.json").write_text(json.dumps({"format": ESTIMATOR_FORMAT}))
    for name in names:
        (path / name).write_bytes(b"x")
    return path


def test_member_files_are_the_ones_a_save_may_replace():
    assert [member_file(i) for i in (1, 2, 12)] == [
        "member_1.safetensors", "member_2.safetensors", "member_12.safetensors"]
    assert all(MEMBER_FILE.fullmatch(member_file(i)) for i in (1, 9, 10, 123))
    with pytest.raises(ValueError, match="numbered from 1"):
        member_file(0)


def test_a_save_with_ensemble_and_tree_files_may_be_replaced(tmp_path: Path):
    names = ["config.json", "model.safetensors", "vocab.txt", member_file(1), member_file(2),
             TREE_ENCODER_FILE, TREE_ARRAYS_FILE, TREE_FOREST_FILE]
    assert replace_refusal(_saved(tmp_path / "m", names), ESTIMATOR_FORMAT) is None


@pytest.mark.parametrize("stranger", ["notes.txt", "member_0.safetensors",
                                      "tree_forest.safetensors.bak"])
def test_a_file_exlm_chem_did_not_write_blocks_the_replacement(tmp_path: Path, stranger: str):
    refusal = replace_refusal(_saved(tmp_path / "m", ["model.safetensors", stranger]),
                              ESTIMATOR_FORMAT)
    assert refusal is not None and stranger in refusal and "did not write" in refusal
