"""exlm_chem.data.tables: the one reader for molecule tables (CSV, SMILES files, Parquet)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.data.tables import iter_chunks, open_table, read_table, stream_table, table_kind
from exlm_chem.errors import DataFileError

ROWS: list = [("CCO", "ethanol", "1"), ("C1CC", "broken ring", None), ("c1ccccc1", "benzene", "0")]


def _frame() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=["smiles", "name", "label"])


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """The same three molecules as CSV, gzipped CSV, Parquet and a .smi file."""
    frame = _frame()
    paths = {"csv": tmp_path / "m.csv", "csv.gz": tmp_path / "m.csv.gz",
             "parquet": tmp_path / "m.parquet", "smi": tmp_path / "m.smi"}
    frame.to_csv(paths["csv"], index=False)
    frame.to_csv(paths["csv.gz"], index=False)
    frame.to_parquet(paths["parquet"], index=False)
    paths["smi"].write_text("".join(f"{s} {n}\n" for s, n, _ in ROWS), encoding="utf-8")
    return paths


def test_kind_by_suffix():
    kinds = [table_kind(n) for n in ("a.csv", "a.CSV.gz", "a.parquet", "a.pq", "a.smi",
                                     "a.smi.gz", "a.txt")]
    assert kinds == ["csv", "csv", "parquet", "parquet", "smi", "smi", "smi"]


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "parquet", "smi"])
def test_every_format_reads_the_same_rows(inputs, fmt):
    table = open_table(inputs[fmt], {"--smiles-column": ["smiles"]})
    assert table.n_rows == 3
    chunks = list(iter_chunks(table, ["smiles", "name"], chunk_size=2))
    assert [list(c.index) for c in chunks] == [[0, 1], [2]]  # data rows across chunks
    frame = pd.concat(chunks)
    assert frame["smiles"].tolist() == ["CCO", "C1CC", "c1ccccc1"]
    assert frame["name"].tolist() == ["ethanol", "broken ring", "benzene"]


def test_missing_cells_are_none_and_values_text(inputs):
    for fmt in ("csv", "parquet"):
        frame = read_table(open_table(inputs[fmt]), ["label"])
        assert frame["label"].tolist() in (["1", None, "0"], ["1.0", None, "0.0"])


def test_missing_column_lists_the_columns(inputs):
    with pytest.raises(ValueError, match=r"--target-columns 'p_np' not found in .*m\.csv; "
                                         r"its columns are: smiles, name, label"):
        open_table(inputs["csv"], {"--target-columns": ["p_np"]})
    with pytest.raises(ValueError, match=r"'SMILES' not found in .*m\.smi; its columns are: "
                                         r"smiles, name"):
        open_table(inputs["smi"], {"--smiles-column": ["SMILES"]})


def test_empty_and_header_only_inputs_name_the_file(tmp_path: Path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.csv is empty: no header and no data rows"):
        open_table(empty)
    empty_gz = tmp_path / "empty.csv.gz"
    with gzip.open(empty_gz, "wb"):
        pass
    with pytest.raises(ValueError, match=r"empty\.csv\.gz is empty"):
        open_table(empty_gz)
    header = tmp_path / "header.csv"
    header.write_text("smiles,p_np\n")
    with pytest.raises(ValueError, match=r"header\.csv has no data rows \(only a header: "
                                         r"smiles, p_np\)"):
        open_table(header, {"--smiles-column": ["smiles"]})
    blank = tmp_path / "blank.smi"
    blank.write_text("\n  \n")
    with pytest.raises(ValueError, match=r"blank\.smi has no SMILES"):
        open_table(blank)
    pq_empty = tmp_path / "none.parquet"
    _frame().iloc[:0].to_parquet(pq_empty)
    with pytest.raises(ValueError, match=r"none\.parquet has no data rows"):
        open_table(pq_empty)
    with pytest.raises(FileNotFoundError, match=r"input file not found: .*nope\.csv"):
        open_table(tmp_path / "nope.csv")


def test_latin1_bytes_name_file_row_and_column(tmp_path: Path):
    path = tmp_path / "latin.csv"
    path.write_bytes("smiles,name\nCCO,ethanol\nCCN,ethylamine\nCC(=O)O,caf\xe9\n"
                     .encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.csv, data row 2, column 'name': "
                                         r"b'caf\\xe9' is not valid utf-8.*--encoding"):
        open_table(path, {"--smiles-column": ["smiles"], "--keep-columns": ["name"]})
    # a column that is not read does not matter; the stated encoding reads it right
    assert open_table(path, {"--smiles-column": ["smiles"]}).n_rows == 3
    table = open_table(path, {"--keep-columns": ["name"]}, encoding="latin-1")
    assert read_table(table, ["name"])["name"].tolist() == ["ethanol", "ethylamine", "café"]


def test_chunk_size_must_be_positive(inputs):
    table = open_table(inputs["csv"])
    with pytest.raises(ValueError, match=r"--chunk-size must be a positive integer, got 0"):
        next(iter_chunks(table, ["smiles"], chunk_size=0))


def test_columns_come_in_the_order_asked_without_repeats(inputs):
    for fmt in ("csv", "parquet", "smi"):
        table = open_table(inputs[fmt])
        frame = next(iter_chunks(table, ["name", "smiles", "name"]))
        assert frame.columns.tolist() == ["name", "smiles"], fmt


def test_smi_lines_split_at_the_first_space_and_gzip_reads_the_same(tmp_path: Path):
    text = "CCO ethanol, the solvent\n\nC1CC\n  c1ccccc1\tbenzene \n"
    plain, packed = tmp_path / "m.smi", tmp_path / "m.smi.gz"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(text)
    for path in (plain, packed):
        table = open_table(path, {"--smiles-column": ["smiles"]})
        assert (table.kind, table.columns, table.n_rows) == ("smi", ["smiles", "name"], 4)
        frame = read_table(table, ["smiles", "name"])
        assert frame["smiles"].tolist() == ["CCO", None, "C1CC", "c1ccccc1"]
        assert frame["name"].tolist() == ["ethanol, the solvent", None, None, "benzene"]
        assert list(frame.index) == [0, 1, 2, 3]  # data row i is line i + 1, blank or not


def test_parquet_values_of_any_type_come_out_as_text(tmp_path: Path):
    path = tmp_path / "typed.pq"
    pd.DataFrame({"smiles": ["CCO", "CN"], "n": [3, 7], "x": [0.5, None]}).to_parquet(path)
    table = open_table(path, {"--keep-columns": ["n", "x"]})
    assert (table.kind, table.columns, table.n_rows) == ("parquet", ["smiles", "n", "x"], 2)
    frame = read_table(table, ["n", "x"])
    assert frame["n"].tolist() == ["3", "7"]
    assert frame["x"].tolist() == ["0.5", None]


def test_numeric_looking_csv_cells_stay_as_written(tmp_path: Path):
    path = tmp_path / "m.csv"
    path.write_text("smiles,id\n1,007\nC,1e3\n", encoding="utf-8")
    frame = read_table(open_table(path), ["smiles", "id"])
    assert frame.values.tolist() == [["1", "007"], ["C", "1e3"]]


def test_columns_read_as_written_keep_missing_looking_text(tmp_path: Path):
    path = tmp_path / "na.csv"
    path.write_text("smiles,label\nNA,NA\n,\nCCO,1\n", encoding="utf-8")
    table = open_table(path)
    frame = next(iter_chunks(table, ["smiles", "label"], as_written=["smiles"]))
    assert frame["smiles"].tolist() == ["NA", None, "CCO"]
    assert frame["label"].tolist() == [None, None, "1"]
    streamed = next(stream_table(path, ["smiles"], chunk_size=2, as_written=["smiles"]))
    assert streamed["smiles"].tolist() == ["NA", None]


def test_an_unreadable_file_is_one_error_naming_it(tmp_path: Path):
    """Whatever the reader underneath raises (codec, gzip, pandas, pyarrow): one
    DataFileError, one line, the file's name and what to do."""
    frame_text = _frame().to_csv(index=False).encode()
    packed = gzip.compress(frame_text * 50)
    noise = np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes()
    cases = {
        "random.csv": (noise, r"random\.csv, header row: b'.*' is not valid utf-8; .*--encoding"),
        "cut.csv.gz": (packed[: len(packed) // 2], r"cut\.csv\.gz: the compressed data ends "
                                                   r"early .*: the file is truncated; copy"),
        "text.parquet": (frame_text, r"text\.parquet: not a Parquet file \(ArrowInvalid: .*\); "
                                     r"a name ending in \.parquet"),
        "plain.csv.gz": (frame_text, r"plain\.csv\.gz: not valid gzip data \(BadGzipFile: "
                                     r".*\); .*rename it without \.gz"),
        "quote.csv": (b'smiles,name\n"CCO,x\n', r"quote\.csv: not a well-formed CSV table "
                                                r"\(ParserError: .*EOF inside string"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DataFileError, match=rf"^{re.escape(str(tmp_path))}/{message}") as err:
            open_table(path, {"--smiles-column": ["smiles"]})
        assert "\n" not in str(err.value), name


def test_a_file_cut_short_names_the_last_data_row_read(tmp_path: Path):
    path = tmp_path / "cut.smi.gz"
    packed = gzip.compress("".join(f"C{'C' * (i % 7)}O\n" for i in range(60_000)).encode())
    path.write_bytes(packed[: len(packed) * 3 // 4])
    rows = 0
    with pytest.raises(DataFileError, match=r"cut\.smi\.gz, after data row (\d+): the "
                                            r"compressed data ends early") as err:
        for chunk in stream_table(path, ["smiles"], chunk_size=1000):
            rows += len(chunk)
    assert rows > 0 and f"after data row {rows - 1}:" in str(err.value)
