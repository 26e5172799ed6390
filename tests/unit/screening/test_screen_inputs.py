"""Input files of a screen: globs, formats and fixed-size chunks."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest

from exlm_chem.errors import DataFileError
from exlm_chem.screening import inputs
from exlm_chem.screening.inputs import (
    check_input_columns,
    input_format,
    iter_chunks,
    resolve_inputs,
)


@pytest.fixture
def three_formats(tmp_path):
    """The same 7 rows as .smi.gz (blank line, extra fields), .csv and .parquet."""
    smiles = ["CCO", "c1ccccc1", "", "not_a_smiles", "N#N", "C1CC", "O"]
    lines = [f"{s} mol{i} extra\n" if s else "   \n" for i, s in enumerate(smiles)]
    with gzip.open(tmp_path / "a.smi.gz", "wt") as fh:
        fh.writelines(lines)
    frame = pd.DataFrame({"id": range(7), "SMILES": smiles})
    frame.to_csv(tmp_path / "b.csv", index=False)  # "" -> an empty cell
    frame.assign(SMILES=[s or None for s in smiles]).to_parquet(tmp_path / "c.parquet")
    return smiles


@pytest.mark.parametrize("name, fmt", [("x.smi", "smi"), ("x.SMI.GZ", "smi"),
                                       ("x.smiles", "smi"), ("x.csv.gz", "csv"),
                                       ("x.parquet", "parquet"), ("x.pq", "parquet"),
                                       ("x.sdf", "sdf"), ("x.sdf.gz", "sdf")])
def test_input_format(name, fmt):
    assert input_format(name) == fmt


def test_unsupported_and_missing_inputs_are_named(tmp_path):
    (tmp_path / "x.mol2").write_text("")
    with pytest.raises(ValueError, match=r"x\.mol2: unsupported input; use one of \.smi"):
        resolve_inputs([tmp_path / "x.mol2"])
    with pytest.raises(FileNotFoundError, match=r"'.*/\*\.smi' matches no file"):
        resolve_inputs([str(tmp_path / "*.smi")])
    with pytest.raises(FileNotFoundError, match=r"input '.*nope\.smi' is not a file"):
        resolve_inputs([str(tmp_path / "nope.smi")])
    with pytest.raises(ValueError, match="no input files"):
        resolve_inputs([])


def test_globs_expand_sorted_and_once(tmp_path, three_formats):
    files = resolve_inputs([str(tmp_path / "*.parquet"), str(tmp_path / "[ab]*"),
                            tmp_path / "c.parquet"])
    assert [f.path for f in files] == [str(tmp_path / n) for n in
                                       ("c.parquet", "a.smi.gz", "b.csv")]
    assert files[2].size == (tmp_path / "b.csv").stat().st_size


def test_chunks_have_fixed_rows_and_keep_every_row(tmp_path, three_formats, monkeypatch):
    monkeypatch.setattr(inputs, "_READ_BLOCK", 2)  # blocks smaller than chunks: re-cut
    files = resolve_inputs([str(tmp_path / "*")])
    chunks = list(iter_chunks(files, 3, smiles_column="SMILES"))
    assert [(c.file_index, c.index, c.start, len(c.smiles)) for c in chunks] == [
        (f, i, 3 * i, n) for f in range(3) for i, n in enumerate((3, 3, 1))]
    for f in range(3):
        got = [s for c in chunks if c.file_index == f for s in c.smiles]
        assert got == three_formats  # blank line, empty cell and null: "" in place


def test_csv_keeps_smiles_as_text(tmp_path):
    (tmp_path / "n.csv").write_text("smiles\n1\nNA\n0123\n")
    files = resolve_inputs([tmp_path / "n.csv"])
    assert next(iter_chunks(files, 10)).smiles == ["1", "NA", "0123"]


def test_empty_file_has_no_chunks_and_bad_chunk_rows_is_refused(tmp_path):
    (tmp_path / "e.smi").write_text("")
    files = resolve_inputs([tmp_path / "e.smi"])
    assert list(iter_chunks(files, 5)) == []
    with pytest.raises(ValueError, match="chunk_rows must be a positive integer, got 0"):
        list(iter_chunks(files, 0))


def test_missing_smiles_column_names_the_file_and_columns(tmp_path, three_formats):
    with pytest.raises(ValueError, match=r"'smiles' not found in .*b\.csv.*id, SMILES"):
        check_input_columns(tmp_path / "b.csv", "smiles")
    with pytest.raises(ValueError, match=r"'smiles' not found in .*c\.parquet.*id, SMILES"):
        check_input_columns(tmp_path / "c.parquet", "smiles")
    check_input_columns(tmp_path / "a.smi.gz", "anything")  # .smi has no columns


def test_an_unreadable_file_is_named_with_the_row_reached(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "_READ_BLOCK", 10)
    data = gzip.compress("".join(f"C{'C' * (i % 5)}\n" for i in range(100_000)).encode())
    (tmp_path / "cut.smi.gz").write_bytes(data[: len(data) // 2])  # a truncated download
    files = resolve_inputs([tmp_path / "cut.smi.gz"])
    # the table reader's one error (exlm_chem.data.tables.read_error), as in the CLI
    with pytest.raises(DataFileError, match=r"cut\.smi\.gz, after data row \d+: the "
                                            r"compressed data ends early .*truncated"):
        list(iter_chunks(files, 100))
