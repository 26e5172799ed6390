"""The CLI's one input reader (:func:`exlm_chem.cli.inputs.open_input`) and its summary line.

The table reading underneath is tested in tests/unit/data/test_tables.py; here, through
``exlm-chem embed``, that every unreadable input (random bytes, a cut file, a name that
lies about the format, text in another encoding) is one line naming the file, exit status
2 and no output (hypothesis, derandomised).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import re
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exlm_chem.cli import main
from exlm_chem.cli.errors import run_console
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


# ---- unreadable inputs: one line naming the file, exit status 2, no output (issue 67) ----

SMILES = ["CCO", "c1ccccc1O", "CC(=O)N", "C1CC", "N#N"]
NAMES = ["in.csv", "in.csv.gz", "in.smi", "in.smi.gz", "in.txt", "in.parquet", "in.pq"]
FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class EmbedRun(NamedTuple):
    code: int
    err: str  # what was printed to stderr
    path: Path
    out: Path


@pytest.fixture(scope="module")
def embed_cli(tiny_checkpoint, tmp_path_factory):
    """``exlm-chem embed FILE --out OUT`` run in this process on ``data`` written under
    ``name``, with one loaded model for every run (the reader checks come before it)."""
    from exlm_chem.model.molecule_model import MoleculeModel

    loaded = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    folder = tmp_path_factory.mktemp("unreadable")
    number = itertools.count()

    def from_checkpoint(cls, path="default", pooling="mean", device="auto", max_length=256):
        return loaded.view(pooling, max_length)

    def run(name: str, data: bytes, *options: str) -> EmbedRun:
        case = folder / str(next(number))  # a folder per example: its files alone
        case.mkdir()
        path, out = case / name, case / "out.csv"
        path.write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown-token warnings of odd rows
            code = run_console(main, ["embed", str(path), "--out", str(out), "--model",
                                      str(tiny_checkpoint), "--device", "cpu",
                                      "--no-progress", *options])
        return EmbedRun(code, err.getvalue(), path, out)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MoleculeModel, "from_checkpoint", classmethod(from_checkpoint))
        yield run


def _refused_in_one_line(run: EmbedRun) -> str:
    """The one line of a refused input: it names the file; exit 2; no output, whole or
    half-written (nothing beside the input in its folder)."""
    assert run.code == 2, run.err
    assert run.err.endswith("\n") and run.err.count("\n") == 1, run.err
    assert run.err.startswith("exlm-chem: error: ") and str(run.path) in run.err, run.err
    assert [p.name for p in run.path.parent.iterdir()] == [run.path.name]
    return run.err


def _csv_bytes(smiles: list[str] = SMILES) -> bytes:
    return ("smiles,name\n" + "".join(f"{s},m{i}\n" for i, s in enumerate(smiles))).encode()


def _parquet_bytes(tmp_path: Path) -> bytes:
    pd.DataFrame({"smiles": SMILES}).to_parquet(tmp_path / "x.parquet")
    return (tmp_path / "x.parquet").read_bytes()


def test_the_three_unreadable_inputs_of_the_issue(embed_cli, tmp_path):
    noise = np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes()
    err = _refused_in_one_line(embed_cli("random.csv", noise))
    assert "header row" in err and "is not valid utf-8" in err and "--encoding" in err
    packed = gzip.compress(_csv_bytes(SMILES * 2000))
    err = _refused_in_one_line(embed_cli("cut.csv.gz", packed[: len(packed) // 2]))
    assert "the file is truncated" in err
    err = _refused_in_one_line(embed_cli("text.parquet", _csv_bytes()))
    assert "not a Parquet file" in err and "name a CSV file .csv" in err
    # what was right stays right: a NUL byte is one invalid row, the rest embedded
    nul = embed_cli("nul.csv", b"smiles\nCCO\nC\x00C\nc1ccccc1\n")
    assert nul.code == 0 and pd.read_csv(nul.out)["valid"].tolist() == [True, False, True]


def test_a_truncated_file_names_the_last_row_read(embed_cli):
    rows = [f"C{'C' * (i % 7)}O" for i in range(60_000)]
    packed = gzip.compress("".join(f"{s}\n" for s in rows).encode())
    err = _refused_in_one_line(embed_cli("cut.smi.gz", packed[: len(packed) * 3 // 4]))
    assert re.search(r"cut\.smi\.gz, after data row \d+: the compressed data ends early", err)


@FUZZ
@given(data=st.binary(max_size=300), name=st.sampled_from(NAMES),
       encoding=st.sampled_from(["utf-8", "latin-1"]))
def test_any_bytes_are_read_or_refused_in_one_line(embed_cli, data, name, encoding):
    run = embed_cli(name, data, "--encoding", encoding)
    if run.code != 0:
        _refused_in_one_line(run)
    else:  # read: one output row per data row
        assert run.out.is_file()


@FUZZ
@given(name=st.sampled_from(["in.csv.gz", "in.smi.gz", "in.parquet"]),
       share=st.floats(0, 1, exclude_max=True))
def test_a_cut_compressed_or_parquet_file_is_refused(embed_cli, tmp_path_factory, name, share):
    if name.endswith(".parquet"):
        whole = _parquet_bytes(tmp_path_factory.mktemp("parquet"))
    else:
        whole = gzip.compress(_csv_bytes() if ".csv" in name else "\n".join(SMILES).encode())
    _refused_in_one_line(embed_cli(name, whole[: int(share * len(whole))]))


@FUZZ
@given(name=st.sampled_from(["in.parquet", "in.pq", "in.csv.gz", "in.smi.gz"]),
       smiles=st.lists(st.sampled_from(SMILES), min_size=1, max_size=5))
def test_a_name_that_lies_about_the_format_is_refused(embed_cli, name, smiles):
    _refused_in_one_line(embed_cli(name, _csv_bytes(smiles)))


@FUZZ
@given(text=st.text(st.characters(codec="latin-1", exclude_characters=",\r\n\""), min_size=1,
                    max_size=12),
       encoding=st.sampled_from(["latin-1", "cp1252", "utf-16"]),
       header=st.booleans())
def test_text_in_another_encoding_is_read_or_refused_naming_the_row(embed_cli, text, encoding,
                                                                    header):
    name = text if header else "name"  # the odd text in the header, or in a data row
    cell = "x" if header else text
    try:
        data = f"smiles,{name}\nCCO,x\nc1ccccc1,{cell}\n".encode(encoding)
    except UnicodeEncodeError:  # cp1252 lacks a few latin-1 characters
        return
    run = embed_cli("in.csv", data, *([] if header else ["--keep-columns", name]))
    if run.code != 0:
        err = _refused_in_one_line(run)
        assert re.search(r"(header row|data row \d+, column .*): b.* is not valid utf-8"
                         r"|not found in|has no data rows", err), err
