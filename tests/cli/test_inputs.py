"""The CLI's one input reader (CSV, SMILES files, Parquet) and its summary line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from exlm_chem.cli.inputs import iter_chunks, open_table, read_table, table_kind
from exlm_chem.cli.tally import RowTally, reason_kind

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
    paths["smi"].write_text("".join(f"{s} {n}\n\n" for s, n, _ in ROWS), encoding="utf-8")
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


def test_reason_kinds_drop_the_molecule_specific_parts():
    assert [reason_kind(r) for r in (
        "SMILES Parse Error: unclosed ring for input: 'C1CC'",
        "SMILES Parse Error: syntax error while parsing: xx; SMILES Parse Error: check for "
        "mistakes around position 2",
        "Explicit valence for atom # 0 C, 5, is greater than permitted",
        "Can't kekulize mol.  Unkekulized atoms: 0 1 2 3 4",
        "too long (2500 characters > 2000)",
        "empty SMILES",
    )] == ["SMILES Parse Error: unclosed ring", "SMILES Parse Error: syntax error",
           "Explicit valence is greater than permitted", "Can't kekulize mol", "too long",
           "empty SMILES"]


def test_summary_line_and_exit_code(capsys):
    tally = RowTally("predict")
    tally.add(3, 3, [None, "empty SMILES", "too long (2500 characters > 2000)"])
    tally.add(2, 2, ["empty SMILES", None])
    assert tally.line("in.csv", "wrote 5 rows to out.csv") == (
        "predict: read 5 rows from in.csv; wrote 5 rows to out.csv; "
        "3 invalid (2 empty SMILES, 1 too long)")
    assert tally.exit_code(fail_on_invalid=False) == 0
    assert tally.exit_code(fail_on_invalid=True) == 1
    assert "3 of 5 rows are invalid (--fail-on-invalid)" in capsys.readouterr().err
    clean = RowTally("embed")
    clean.add(2, 2, [None, None])
    assert clean.line("a", "b").endswith("; 0 invalid")
    assert clean.exit_code(fail_on_invalid=True) == 0
