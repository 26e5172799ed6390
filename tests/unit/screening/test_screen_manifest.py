"""A screen's output directory: model hash, identity, refusals and complete parts."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exlm_chem.screening.inputs import Chunk, InputFile
from exlm_chem.screening.manifest import (
    MANIFEST,
    PART_KEY,
    check_model_kind,
    completed_part,
    identity,
    model_sha256,
    open_output,
    part_name,
    remove_temporaries,
    run_id,
)

INPUTS = [InputFile("/data/a.smi", 10, 1), InputFile("/data/b.csv", 20, 2)]


def _model(folder, weights=b"w", meta=None):
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "metadata.json").write_text(json.dumps(meta or {"format": "x"}))
    return folder


def test_model_hash_covers_names_and_contents(tmp_path):
    a = _model(tmp_path / "a")
    expected = hashlib.sha256(b"metadata.json\0" + b'{"format": "x"}'
                              + b"model.safetensors\0" + b"w").hexdigest()
    assert model_sha256(a) == expected
    assert model_sha256(_model(tmp_path / "b", weights=b"v")) != expected
    (a / ".hidden").write_text("editor swap file")  # ignored
    assert model_sha256(a) == expected
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        model_sha256(tmp_path / "nope")


def test_model_kind_must_match_the_mode(tmp_path):
    checkpoint = _model(tmp_path / "ckpt")
    fitted = _model(tmp_path / "fit", meta={"estimator": "ExLMMoleculeRegressor"})
    check_model_kind(checkpoint, embed=True)
    check_model_kind(fitted, embed=False)
    with pytest.raises(ValueError, match="pre-trained checkpoint, not a fitted estimator: "
                                         "pass --embed"):
        check_model_kind(checkpoint, embed=False)
    with pytest.raises(ValueError, match="holds a fitted ExLMMoleculeRegressor; --embed needs"):
        check_model_kind(fitted, embed=True)
    with pytest.raises(FileNotFoundError, match=r"no metadata\.json"):
        check_model_kind(tmp_path, embed=True)


def test_same_identity_resumes_and_any_difference_is_listed(tmp_path):
    out = tmp_path / "out"
    ident = identity("abc", "predict", {"chunk_rows": 100, "smiles_column": "smiles"}, INPUTS)
    open_output(out, ident, {"model_path": "/m", "device": "cpu"})
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["model_sha256"] == "abc" and manifest["device"] == "cpu"
    open_output(out, ident, {"model_path": "/elsewhere", "device": "cuda"})  # not compared
    other = identity("abd", "predict", {"chunk_rows": 50, "smiles_column": "smiles"},
                     [INPUTS[0], InputFile("/data/b.csv", 21, 2)])
    with pytest.raises(ValueError) as error:
        open_output(out, other, {})
    assert str(error.value) == (
        f"{out} holds a screen with another model or settings, and one directory never "
        "mixes two: model_sha256: 'abc' there, 'abd' now; setting chunk_rows: 100 there, "
        "50 now; inputs differ (added, removed, reordered or modified: /data/b.csv). Use a "
        "new --out, or delete the directory to start over.")
    assert json.loads((out / MANIFEST).read_text()) == manifest
    assert run_id(ident) != run_id(other) and len(run_id(ident)) == 16


def test_a_foreign_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"is not empty and has no _manifest\.json"):
        open_output(tmp_path, identity("a", "embed", {}, INPUTS), {})
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def _part(path, rows, record):
    table = pa.table({"valid": [True] * rows}).replace_schema_metadata(
        {PART_KEY: json.dumps(record).encode()})
    pq.write_table(table, path)


def test_a_part_is_complete_only_with_its_rows_and_run(tmp_path):
    assert part_name(Chunk(3, 12, 0, [])) == "part-000003-00000012.parquet"
    path = tmp_path / "part-000000-00000000.parquet"
    assert completed_part(path, 4, "run1") is None  # missing
    _part(path, 4, {"run_id": "run1", "rows": 4, "invalid": 1})
    assert completed_part(path, 4, "run1") == (4, 1)
    assert completed_part(path, 5, "run1") is None  # the chunk has more rows now
    assert completed_part(path, 4, "run2") is None  # another run's part
    path.write_bytes(path.read_bytes()[:-30])  # truncated
    assert completed_part(path, 4, "run1") is None


def test_remove_temporaries_leaves_parts_and_manifest(tmp_path):
    for name in (".part-000000-00000000.parquet.ab12.tmp", "part-000000-00000001.parquet",
                 MANIFEST, ".other"):
        (tmp_path / name).write_text("")
    assert remove_temporaries(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other", MANIFEST,
                                                          "part-000000-00000001.parquet"]
