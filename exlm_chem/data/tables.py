"""The one reader for molecule tables: CSV, SMILES files, Parquet and SD files.

The CLI (``embed``, ``fit``, ``predict``, ``explain``, ``entropy``) reads its rows
through :func:`open_table` and :func:`iter_chunks`. Opening a table checks, before any
model is loaded, that the file exists, is not empty, has at least one data row and holds
the columns asked for, and that its text decodes in the stated encoding (an undecodable
byte is an error naming the file, the data row and the column). ``screen`` streams
libraries of any length with :func:`stream_table`, the same chunks without the checks and
row count up front (:mod:`exlm_chem.screening.inputs`).

Formats, by suffix:

- ``.csv`` (any compression pandas reads, e.g. ``.csv.gz``): CSV with a header row;
- ``.parquet`` / ``.pq``: a Parquet file (any column types; values are passed on as text);
- ``.sdf`` (optionally ``.sdf.gz``): an SD file, one data row per record; its columns are
  ``smiles`` (RDKit's SMILES of the record's molecule; missing where RDKit cannot read
  the record, which is reported invalid, never dropped), ``name`` (the title line) and the
  first record's data fields;
- anything else (``.smi``, ``.smi.gz``, ``.txt`` ...): one molecule per line,
  ``SMILES [name]``, no header; its columns are ``smiles`` and ``name``. Every line is
  a data row: a blank line is a row with an empty SMILES (reported invalid, never
  dropped), so data row ``i`` is line ``i + 1`` of the file, as in ``screen`` and the
  MoleculeNet loader.

Cells come out as ``str``, or ``None`` where the cell is empty. A CSV cell that pandas
takes for missing (``NA``, ``null``, ``nan`` ...) is missing too, except in the columns
read ``as_written`` (SMILES: such text is a molecule that fails to parse, reported as
written, not an empty one).

A file that cannot be read is one :class:`~exlm_chem.errors.DataFileError` built by
:func:`read_error`, whatever the reader underneath raised (a codec, gzip, pandas or
pyarrow error): one line naming the file, the row where one is known, and what to do.
The MoleculeNet loader words its failures with it too.
"""

from __future__ import annotations

import gzip
import lzma
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.errors import DataFileError

SMI_COLUMNS = ("smiles", "name")
DEFAULT_CHUNK_SIZE = 8192
# surrogateescape turns each byte that is not valid in the encoding into one of these
_UNDECODED = re.compile("[\udc80-\udcff]")
#: what to do about text that is not in the stated encoding
ENCODING_HINT = ("if the file uses another encoding, say which with --encoding "
                 "(e.g. --encoding latin-1)")
# what pandas decompresses, by suffix
_COMPRESSED = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip", ".zst": "zstd",
               ".tar": "tar"}
# what the readers underneath raise about a file's bytes (pyarrow's own errors are
# recognised by name, so that no error path imports pyarrow)
_READER_ERRORS = (UnicodeError, EOFError, OSError, ValueError, zlib.error, lzma.LZMAError,
                  zipfile.BadZipFile)


class TableInput(NamedTuple):
    """A checked input table: where it is, how to read it, what it holds."""

    path: Path
    kind: str  # "csv" | "smi" | "parquet" | "sdf"
    columns: list[str]  # header, in file order
    n_rows: int  # data rows (> 0); -1 when not counted (stream_table)
    encoding: str  # of a CSV / SMILES file


def table_kind(path: str | Path) -> str:
    """``"parquet"``, ``"sdf"``, ``"smi"`` or ``"csv"``, from the file name's suffixes."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    if ".sdf" in suffixes:
        return "sdf"
    return "csv" if ".csv" in suffixes else "smi"


def open_table(path: str | Path, required: dict[str, Sequence[str]] | None = None,
               encoding: str = "utf-8") -> TableInput:
    """Check an input table and count its data rows (one cheap pass over the file).

    Parameters
    ----------
    path : path
        The input file; :func:`table_kind` says how it is read.
    required : dict, optional
        ``{what: columns}``, e.g. ``{"--smiles-column": ["smiles"]}``: each column must
        exist; ``what`` names the option in the error message.
    encoding : str
        Text encoding of a CSV or SMILES file (e.g. ``"latin-1"``).

    Raises
    ------
    FileNotFoundError
        No such file.
    DataFileError
        An empty file, a header without data rows, a missing column, a byte that is not
        valid in ``encoding``, a truncated or corrupt compressed file, or a file that is
        not the format its name says (:func:`read_error`); the message names the file
        (and row and column where known). It is a ``ValueError``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    if path.stat().st_size == 0:
        raise DataFileError(f"{path} is empty: no header and no data rows")
    kind = table_kind(path)
    columns = check_columns(path, required, encoding)
    wanted = list(dict.fromkeys(c for cols in (required or {}).values() for c in cols))
    table = TableInput(path, kind, columns, 0, encoding)
    counted = ["smiles", *wanted] if kind == "smi" else wanted or columns[:1]
    n_rows = n_smiles = 0
    for chunk in iter_chunks(table, counted):
        n_rows += len(chunk)
        n_smiles += int(chunk["smiles"].notna().sum()) if kind == "smi" else len(chunk)
    if n_smiles == 0:
        raise DataFileError(f"{path} has no data rows (only a header: {', '.join(columns)})"
                            if kind != "smi" else f"{path} has no SMILES (only blank lines)")
    return table._replace(n_rows=n_rows)


def check_columns(path: str | Path, required: dict[str, Sequence[str]] | None = None,
                  encoding: str = "utf-8") -> list[str]:
    """The table's columns, in file order, read from its header alone; each column of
    ``required`` (``{what: columns}``, as in :func:`open_table`) must be among them."""
    path = Path(path)
    columns = _columns(path, table_kind(path), encoding)
    for what, wanted in (required or {}).items():
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise DataFileError(f"{what} {', '.join(map(repr, missing))} not found in "
                                f"{path}; its columns are: {', '.join(columns)}")
    return columns


def iter_chunks(table: TableInput, columns: Sequence[str],
                chunk_size: int = DEFAULT_CHUNK_SIZE,
                as_written: Sequence[str] = ()) -> Iterator[Any]:
    """DataFrames of at most ``chunk_size`` rows holding ``columns`` (str or None cells).

    The index counts data rows from 0 across chunks. In the columns ``as_written``, only
    an empty cell is missing. A file that cannot be read raises :func:`read_error`'s
    :class:`~exlm_chem.errors.DataFileError`, naming the file and the data row (an
    undecodable byte: its row and column; a truncated file: the last row read whole).
    """
    if chunk_size < 1:
        raise ValueError(f"--chunk-size must be a positive integer, got {chunk_size}")
    columns = list(dict.fromkeys(columns))
    if table.kind == "csv":
        chunks = _csv_chunks(table, columns, chunk_size, set(as_written))
    else:
        chunks = {"smi": _smi_chunks, "parquet": _parquet_chunks, "sdf": _sdf_chunks}[table.kind](
            table, columns, chunk_size)
    start = 0  # data rows read whole so far
    try:
        for frame in chunks:
            _check_decoded(table, frame)
            yield frame
            start += len(frame)
    except Exception as error:
        if isinstance(error, DataFileError) or not _is_reader_error(error):
            raise  # ours already names the file; anything else is a bug: keep its traceback
        where = f", after data row {start - 1}" if start else ""
        raise read_error(table.path, error, where, table.encoding) from error


def stream_table(path: str | Path, columns: Sequence[str],
                 chunk_size: int = DEFAULT_CHUNK_SIZE, encoding: str = "utf-8",
                 as_written: Sequence[str] = ()) -> Iterator[Any]:
    """The chunks of :func:`iter_chunks` straight from a file, without :func:`open_table`'s
    checks and row count: one pass, whatever the length (an empty file has no chunks)."""
    path = Path(path)
    table = TableInput(path, table_kind(path), [], -1, encoding)
    return iter_chunks(table, columns, chunk_size, as_written)


def read_table(table: TableInput, columns: Sequence[str],
               as_written: Sequence[str] = ()) -> Any:
    """All rows of ``columns`` as one DataFrame (str or None cells)."""
    import pandas as pd

    frames = list(iter_chunks(table, columns, max(1, table.n_rows), as_written))
    return pd.concat(frames) if len(frames) > 1 else frames[0]


def read_error(path: str | Path, error: BaseException, where: str = "",
               encoding: str = "utf-8", hint: str = ENCODING_HINT) -> DataFileError:
    """The one error of a table that cannot be read: ``{path}{where}: {what}; {what to do}``.

    Parameters
    ----------
    path : path
        The file; its name says what it should hold (:func:`table_kind`, a compression
        suffix such as ``.gz``).
    error : Exception
        What the reader underneath raised: a codec error (the undecodable bytes are
        named), ``EOFError`` (a truncated compressed file), a gzip/zlib/lzma/zip error,
        a pyarrow error (not a Parquet file), a pandas parser error (not a well-formed
        CSV), or any other ``ValueError`` / ``OSError`` of reading.
    where : str
        Where in the file, e.g. ``", data row 3, column 'name'"``, ``", header row"`` or
        ``", after data row 41"``; ``""`` when not known.
    encoding : str
        The encoding the text was read in.
    hint : str
        What to do about undecodable text (default: name the encoding with
        ``--encoding``).

    Returns
    -------
    DataFileError
        Its message is one line.
    """
    what, fix = _what_went_wrong(Path(path), error, encoding, hint)
    return DataFileError(f"{path}{where}: {what}; {fix}")


def _what_went_wrong(path: Path, error: BaseException, encoding: str,
                     hint: str) -> tuple[str, str]:
    """(what went wrong, what to do) of :func:`read_error`, from the error and the name."""
    suffixes = [s.lower() for s in path.suffixes]
    packed = next((s for s in reversed(suffixes) if s in _COMPRESSED), None)
    detail = " ".join(f"{type(error).__name__}: {error}".split())  # one line
    if isinstance(error, UnicodeError):
        return f"{_undecoded_bytes(error, encoding)!r} is not valid {encoding}", hint
    if isinstance(error, EOFError):
        return (f"the compressed data ends early ({detail}): the file is truncated",
                "copy or download it again")
    if packed and isinstance(error, OSError | zlib.error | lzma.LZMAError | zipfile.BadZipFile):
        return (f"not valid {_COMPRESSED[packed]} data ({detail})",
                f"copy it again if it is damaged, or rename it without {packed} if it is "
                "not compressed")
    if table_kind(path) == "parquet":
        return (f"not a Parquet file ({detail})",
                "a name ending in .parquet or .pq must hold Parquet data; name a CSV file "
                ".csv and a file of one SMILES per line .smi")
    if type(error).__name__ == "ParserError":  # pandas's; also a ValueError
        return (f"not a well-formed CSV table ({detail})",
                "check its quoting and that every row has as many fields as the header; "
                "name a file of one SMILES per line .smi")
    return (f"cannot be read as {table_kind(path).upper()} ({detail})",
            "check that it holds what its name says")


def _undecoded_bytes(error: UnicodeError, encoding: str) -> bytes | str:
    """The bytes a codec error is about: those of a failed decode, or the ones that
    surrogateescape turned into lone surrogates of a header pandas could not store."""
    failed = getattr(error, "object", b"")[getattr(error, "start", 0):getattr(error, "end", 0)]
    if isinstance(failed, str):
        try:
            return failed.encode(encoding, "surrogateescape")
        except UnicodeError:
            return failed
    return bytes(failed)


def _is_reader_error(error: BaseException) -> bool:
    """An error of the readers underneath about the file's bytes (not a bug of ours)."""
    module = type(error).__module__ or ""
    return isinstance(error, _READER_ERRORS) or module.startswith("pyarrow")


def _columns(path: Path, kind: str, encoding: str) -> list[str]:
    """The header, read alone; an unreadable one is :func:`read_error`'s error."""
    if kind == "smi":
        return list(SMI_COLUMNS)
    try:
        return _header(path, kind, encoding)
    except Exception as error:
        if isinstance(error, DataFileError) or not _is_reader_error(error):
            raise
        where = ", header row" if isinstance(error, UnicodeError) else ""
        raise read_error(path, error, where, encoding) from error


def _header(path: Path, kind: str, encoding: str) -> list[str]:
    if kind == "sdf":
        for mol in _sdf_molecules(path):
            if mol is not None:
                return [*SMI_COLUMNS, *(c for c in mol.GetPropNames() if c not in SMI_COLUMNS)]
        return list(SMI_COLUMNS)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return [str(c) for c in pq.ParquetFile(path).schema_arrow.names]
    import pandas as pd

    try:
        header = pd.read_csv(path, nrows=0, encoding=encoding,
                             encoding_errors="surrogateescape")
    except pd.errors.EmptyDataError:  # e.g. a .csv.gz holding nothing
        raise DataFileError(f"{path} is empty: no header and no data rows") from None
    return [str(c) for c in header.columns]


def _as_text(frame: Any, start: int) -> Any:
    """Cells as str or None; index = data row numbers from ``start``."""
    import pandas as pd

    out = pd.DataFrame(
        {c: [None if _missing(v) else str(v) for v in frame[c].tolist()] for c in frame.columns},
        dtype=object,
    )
    out.index = pd.RangeIndex(start, start + len(out))
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN


def _csv_chunks(table: TableInput, columns: list[str], chunk_size: int,
                as_written: set[str]) -> Iterator[Any]:
    import pandas as pd
    from pandas._libs.parsers import STR_NA_VALUES  # what read_csv takes for missing

    missing = {c: [""] if c in as_written else sorted(STR_NA_VALUES) for c in columns}
    # object dtype keeps SMILES text as it is (and keeps undecoded bytes visible to the check)
    reader = pd.read_csv(table.path, usecols=columns, dtype=object, chunksize=chunk_size,
                         keep_default_na=False, na_values=missing,
                         encoding=table.encoding, encoding_errors="surrogateescape")
    start = 0
    with reader:
        for frame in reader:
            yield _as_text(frame[columns], start)
            start += len(frame)


def _smi_chunks(table: TableInput, columns: list[str], chunk_size: int) -> Iterator[Any]:
    import pandas as pd

    opener = gzip.open if table.path.suffix.lower() == ".gz" else open
    rows: list[tuple[str, str | None]] = []
    start = 0
    with opener(table.path, "rt", encoding=table.encoding, errors="surrogateescape") as handle:
        for line in handle:
            fields = line.strip().split(maxsplit=1)  # a blank line: (None, None), still a row
            rows.append((fields[0] if fields else None, fields[1] if len(fields) > 1 else None))
            if len(rows) == chunk_size:
                yield pd.DataFrame(rows, columns=SMI_COLUMNS, dtype=object,
                                   index=pd.RangeIndex(start, start + len(rows)))[columns]
                start, rows = start + len(rows), []
    if rows:
        yield pd.DataFrame(rows, columns=SMI_COLUMNS, dtype=object,
                           index=pd.RangeIndex(start, start + len(rows)))[columns]


def _parquet_chunks(table: TableInput, columns: list[str], chunk_size: int) -> Iterator[Any]:
    import pyarrow.parquet as pq

    start = 0
    for batch in pq.ParquetFile(table.path).iter_batches(batch_size=chunk_size,
                                                          columns=columns):
        yield _as_text(batch.to_pandas(), start)
        start += batch.num_rows


def _sdf_molecules(path: Path) -> Iterator[Any]:
    """The records of an SD file as RDKit molecules (None for a record RDKit rejects)."""
    from rdkit import Chem, RDLogger

    opener = gzip.open if path.suffix.lower() == ".gz" else open
    RDLogger.DisableLog("rdApp.*")  # a rejected record is reported as an invalid row
    try:
        with opener(path, "rb") as handle:
            yield from Chem.ForwardSDMolSupplier(handle)
    finally:
        RDLogger.EnableLog("rdApp.*")


def _sdf_chunks(table: TableInput, columns: list[str], chunk_size: int) -> Iterator[Any]:
    import pandas as pd
    from rdkit import Chem

    rows: list[dict[str, str | None]] = []
    start = 0
    for mol in _sdf_molecules(table.path):
        if mol is None:
            rows.append({})
        else:
            fields = {c: mol.GetProp(c) for c in mol.GetPropNames()}
            rows.append({**fields, "smiles": Chem.MolToSmiles(mol),
                         "name": mol.GetProp("_Name") if mol.HasProp("_Name") else None})
        if len(rows) == chunk_size:
            yield pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=columns,
                               dtype=object, index=pd.RangeIndex(start, start + len(rows)))
            start, rows = start + len(rows), []
    if rows:
        yield pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=columns,
                           dtype=object, index=pd.RangeIndex(start, start + len(rows)))


def _check_decoded(table: TableInput, frame: Any) -> None:
    for column in frame.columns:
        for row, value in frame[column].items():
            if value is not None and _UNDECODED.search(value):
                raw = value.encode(table.encoding, "surrogateescape")
                failed = UnicodeDecodeError(table.encoding, raw, 0, len(raw), "undecodable")
                raise read_error(table.path, failed, f", data row {row}, column {column!r}",
                                 table.encoding)
