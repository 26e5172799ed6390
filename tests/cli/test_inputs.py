"""The CLI's one input reader (:func:`exlm_chem.cli.inputs.open_input`) and its summary line.

The table reading underneath is tested in tests/unit/data/test_tables.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from exlm_chem.cli.inputs import CliInput, open_input, smiles_cells
from exlm_chem.cli.tally import RowTally, reason_kind


@pytest.fixture
def table_csv(tmp_path: Path) -> Path:
    path = tmp_path / "m.csv"
    pd.DataFrame({"id": ["a", "b", "c"], "smiles": ["CCO", None, "c1ccccc1"],
                  "label": ["1", "0", None]}).to_csv(path, index=False)
    return path


def test_open_input_checks_the_columns_and_drops_repeats(table_csv):
    rows = open_input(table_csv, "smiles", ["id", "label", "id"])
    assert isinstance(rows, CliInput)
    assert rows.columns == ["id", "label"]
    assert (rows.smiles_column, rows.table.n_rows, rows.table.kind) == ("smiles", 3, "csv")


def test_open_input_names_the_option_of_a_missing_column(table_csv):
    with pytest.raises(ValueError, match=r"^--smiles-column 'SMILES' not found in .*m\.csv; "
                                         r"its columns are: id, smiles, label$"):
        open_input(table_csv, "SMILES", ["id"])
    with pytest.raises(ValueError, match=r"^--keep-columns 'name' not found"):
        open_input(table_csv, "smiles", ["name"])
    with pytest.raises(ValueError, match=r"^--target-columns 'p_np', 'y' not found"):
        open_input(table_csv, "smiles", ["p_np", "label", "y"], option="--target-columns")


def test_chunks_and_read_give_aligned_frames_and_smiles(table_csv):
    rows = open_input(table_csv, "smiles", ["id"])
    chunks = list(rows.chunks(2))
    assert [list(frame.index) for frame, _ in chunks] == [[0, 1], [2]]
    assert [smiles for _, smiles in chunks] == [["CCO", ""], ["c1ccccc1"]]  # empty cell: ""
    assert [frame.columns.tolist() for frame, _ in chunks] == [["smiles", "id"]] * 2
    frame, smiles = rows.read()
    assert smiles == ["CCO", "", "c1ccccc1"]
    assert frame["id"].tolist() == ["a", "b", "c"]


def test_smiles_column_may_also_be_kept(table_csv):
    frame, smiles = open_input(table_csv, "smiles", ["smiles"]).read()
    assert frame.columns.tolist() == ["smiles"]
    assert smiles_cells(frame, "smiles") == smiles == ["CCO", "", "c1ccccc1"]


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
