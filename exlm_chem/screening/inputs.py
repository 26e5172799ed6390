"""Input files of a screen, and their SMILES streamed in fixed-size chunks.

Chunk ``k`` of a file always holds its data rows ``[k * R, (k + 1) * R)``, so a rerun
cuts the same chunks and can recognise the ones already done. Only one block of a file
is in memory at a time, whatever its length.

Files are read by :func:`exlm_chem.data.tables.stream_table`, with the CLI's rules:
``.smi`` / ``.smiles`` (one molecule per line, the SMILES is the line's first
whitespace-separated field, no header; a blank line is an empty SMILES, not a skipped
row), ``.csv`` and ``.parquet`` / ``.pq`` (a named SMILES column; an empty cell is an
empty SMILES, any other cell is read as written), ``.sdf`` (RDKit's SMILES of each record;
a record RDKit cannot read is an empty SMILES). Text formats may be gzipped (``.gz``)
and are UTF-8.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.data.tables import check_columns, stream_table, table_kind

#: Suffixes a screen reads: a glob over a folder must not take a log file for molecules.
SUFFIXES = (".smi", ".smiles", ".smi.gz", ".smiles.gz", ".csv", ".csv.gz", ".parquet", ".pq",
            ".sdf", ".sdf.gz")
#: formats whose SMILES column is fixed (``smiles``): SMILES files, and SD files (RDKit's
#: SMILES of each record's molecule)
FIXED_SMILES = ("smi", "sdf")
_READ_BLOCK = 65_536  # rows per read


class InputFile(NamedTuple):
    path: str  # absolute
    size: int  # bytes
    mtime_ns: int


class Chunk(NamedTuple):
    file_index: int  # position of the file in the resolved input list
    index: int  # chunk number within the file
    start: int  # 0-based data row of the chunk's first SMILES in its file
    smiles: list[str]
    #: [n, F] object array of the feature columns read beside the SMILES (cells as text,
    #: None where empty), or None when none are read
    features: Any = None


def input_format(path: str | Path) -> str:
    """``"smi"``, ``"csv"``, ``"parquet"`` or ``"sdf"`` (:func:`~exlm_chem.data.tables.table_kind`);
    a ``ValueError`` for a suffix not in :data:`SUFFIXES`."""
    if not Path(path).name.lower().endswith(SUFFIXES):
        raise ValueError(f"{path}: unsupported input; use one of {', '.join(SUFFIXES)}")
    return table_kind(path)


def resolve_inputs(patterns: Sequence[str | os.PathLike[str]]) -> list[InputFile]:
    """Files named by ``patterns`` (paths or globs), in order, each once.

    A pattern that matches nothing, a missing file or an unsupported suffix is a clear
    error naming it.
    """
    if isinstance(patterns, str | os.PathLike):
        patterns = [patterns]
    paths: list[Path] = []
    for pattern in map(str, patterns):
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
            if not matches:
                raise FileNotFoundError(f"input pattern {pattern!r} matches no file")
        else:
            matches = [os.path.expanduser(pattern)]
        for match in matches:
            path = Path(match).resolve()
            if not path.is_file():
                raise FileNotFoundError(f"input {match!r} is not a file")
            input_format(path)
            paths.append(path)
    if not paths:
        raise ValueError("no input files given")
    files = []
    for path in dict.fromkeys(paths):
        stat = path.stat()
        files.append(InputFile(str(path), stat.st_size, stat.st_mtime_ns))
    return files


def check_input_columns(path: str | Path, smiles_column: str,
                        more: dict[str, Sequence[str]] | None = None) -> None:
    """A clear ``ValueError``, naming the file and the missing columns, when a CSV or
    Parquet file lacks the SMILES column, or any file lacks a column of ``more``
    (``{what: columns}``, e.g. a model's feature columns; a ``.smi`` file holds only
    ``smiles`` and ``name``)."""
    required = {k: list(v) for k, v in (more or {}).items() if v}
    if input_format(path) not in FIXED_SMILES:
        required = {"--smiles-column": [smiles_column], **required}
    if required:
        check_columns(path, required)


def read_blocks(path: str, smiles_column: str = "smiles", feature_columns: Sequence[str] = ()
                ) -> Iterator[tuple[list[str], Any]]:
    """The file's SMILES in blocks of any size, in row order (empty cells as ``""``),
    each with its ``feature_columns`` cells ([n, F] object array; None without them)."""
    column = "smiles" if input_format(path) in FIXED_SMILES else smiles_column
    feature_columns = list(feature_columns)
    for frame in stream_table(path, [column, *feature_columns], _READ_BLOCK,
                              as_written=[column]):
        features = frame[feature_columns].to_numpy(dtype=object) if feature_columns else None
        yield ["" if s is None else s for s in frame[column]], features


def iter_chunks(files: Sequence[InputFile], chunk_rows: int,
                smiles_column: str = "smiles", feature_columns: Sequence[str] = ()
                ) -> Iterator[Chunk]:
    """Every file's SMILES cut into chunks of exactly ``chunk_rows`` (a file's last chunk
    may be shorter; an empty file has none), with their ``feature_columns`` cells.
    ``chunk_rows`` is checked at the call."""
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return _chunks(files, chunk_rows, smiles_column, list(feature_columns))


def _chunks(files: Sequence[InputFile], chunk_rows: int, smiles_column: str,
            feature_columns: list[str]) -> Iterator[Chunk]:
    import numpy as np

    def chunk(file_index: int, index: int, smiles: list[str], rows: list[Any]) -> Chunk:
        features = np.asarray(rows, dtype=object).reshape(len(smiles), -1) \
            if feature_columns else None
        return Chunk(file_index, index, index * chunk_rows, smiles, features)

    for file_index, file in enumerate(files):
        pending: list[str] = []
        rows: list[Any] = []  # the pending SMILES' feature cells, one row each
        index = 0
        # a file that cannot be read raises the table reader's one error, naming the file
        # and the last data row read whole (exlm_chem.data.tables.read_error)
        for block, features in read_blocks(file.path, smiles_column, feature_columns):
            pending.extend(block)
            if features is not None:
                rows.extend(features)
            while len(pending) >= chunk_rows:
                yield chunk(file_index, index, pending[:chunk_rows], rows[:chunk_rows])
                del pending[:chunk_rows], rows[:chunk_rows]
                index += 1
        if pending:
            yield chunk(file_index, index, pending, rows)
