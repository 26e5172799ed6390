"""Input files of a screen, and their SMILES streamed in fixed-size chunks.

Chunk ``k`` of a file always holds its data rows ``[k * R, (k + 1) * R)``, so a rerun
cuts the same chunks and can recognise the ones already done. Only one block of a file
is in memory at a time, whatever its length.

Files are read by :func:`exlm_chem.data.tables.stream_table`, with the CLI's rules:
``.smi`` / ``.smiles`` (one molecule per line, the SMILES is the line's first
whitespace-separated field, no header; a blank line is an empty SMILES, not a skipped
row), ``.csv`` and ``.parquet`` / ``.pq`` (a named SMILES column; an empty cell is an
empty SMILES, any other cell is read as written). Text formats may be gzipped (``.gz``)
and are UTF-8.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from exlm_chem.data.tables import check_columns, stream_table, table_kind

#: Suffixes a screen reads: a glob over a folder must not take a log file for molecules.
SUFFIXES = (".smi", ".smiles", ".smi.gz", ".smiles.gz", ".csv", ".csv.gz", ".parquet", ".pq")
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


def input_format(path: str | Path) -> str:
    """``"smi"``, ``"csv"`` or ``"parquet"`` (:func:`~exlm_chem.data.tables.table_kind`);
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


def check_smiles_column(path: str | Path, column: str) -> None:
    """A clear ``ValueError`` when a CSV or Parquet file lacks the SMILES ``column``."""
    if input_format(path) != "smi":
        check_columns(path, {"--smiles-column": [column]})


def read_blocks(path: str, smiles_column: str = "smiles") -> Iterator[list[str]]:
    """The file's SMILES in blocks of any size, in row order (empty cells as ``""``)."""
    column = "smiles" if input_format(path) == "smi" else smiles_column
    for frame in stream_table(path, [column], _READ_BLOCK, as_written=[column]):
        yield ["" if s is None else s for s in frame[column]]


def iter_chunks(files: Sequence[InputFile], chunk_rows: int,
                smiles_column: str = "smiles") -> Iterator[Chunk]:
    """Every file's SMILES cut into chunks of exactly ``chunk_rows`` (a file's last chunk
    may be shorter; an empty file has none). ``chunk_rows`` is checked at the call."""
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return _chunks(files, chunk_rows, smiles_column)


def _chunks(files: Sequence[InputFile], chunk_rows: int, smiles_column: str) -> Iterator[Chunk]:
    for file_index, file in enumerate(files):
        pending: list[str] = []
        index = 0
        try:
            for block in read_blocks(file.path, smiles_column):
                pending.extend(block)
                while len(pending) >= chunk_rows:
                    yield Chunk(file_index, index, index * chunk_rows, pending[:chunk_rows])
                    del pending[:chunk_rows]
                    index += 1
        except (OSError, EOFError, ValueError) as error:  # gzip, UTF-8, CSV, Parquet errors
            raise ValueError(f"{file.path}: unreadable after data row "
                             f"{index * chunk_rows + len(pending)}: {error}") from error
        if pending:
            yield Chunk(file_index, index, index * chunk_rows, pending)
