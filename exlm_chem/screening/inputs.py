"""Input files of a screen, and their SMILES streamed in fixed-size chunks.

Chunk ``k`` of a file always holds its data rows ``[k * R, (k + 1) * R)``, so a rerun
cuts the same chunks and can recognise the ones already done. Only one block of a file
is in memory at a time, whatever its length.

Formats (by suffix): ``.smi`` / ``.smiles`` (one molecule per line, the SMILES is the
line's first whitespace-separated field, no header; a blank line is an empty SMILES,
not a skipped row), ``.csv`` and ``.parquet`` (a named SMILES column; an empty cell
is an empty SMILES). Text formats may be gzipped (``.gz``).
"""

from __future__ import annotations

import glob
import gzip
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

FORMATS = {".smi": "smi", ".smiles": "smi", ".smi.gz": "smi", ".smiles.gz": "smi",
           ".csv": "csv", ".csv.gz": "csv", ".parquet": "parquet"}
_READ_BLOCK = 65_536  # rows per read from a CSV or Parquet file


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
    """``"smi"``, ``"csv"`` or ``"parquet"``; a ``ValueError`` for anything else."""
    name = Path(path).name.lower()
    for suffix, fmt in FORMATS.items():
        if name.endswith(suffix):
            return fmt
    raise ValueError(f"{path}: unsupported input; use one of {', '.join(FORMATS)}")


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
    fmt = input_format(path)
    if fmt == "csv":
        from exlm_chem.data.tables import open_table

        open_table(path, {"--smiles-column": [column]})
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        names = pq.ParquetFile(path).schema_arrow.names
        if column not in names:
            raise ValueError(f"--smiles-column {column!r} not found in {path}; its columns "
                             f"are: {', '.join(names)}")


def _smi_blocks(path: str) -> Iterator[list[str]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        block: list[str] = []
        for line in fh:
            fields = line.split(maxsplit=1)
            block.append(fields[0] if fields else "")
            if len(block) == _READ_BLOCK:
                yield block
                block = []
        if block:
            yield block


def _csv_blocks(path: str, column: str) -> Iterator[list[str]]:
    import pandas as pd

    # dtype=str: SMILES such as "1" or "NaN"-like text must not turn into numbers
    for frame in pd.read_csv(path, usecols=[column], dtype=str, keep_default_na=False,
                             chunksize=_READ_BLOCK):
        yield frame[column].tolist()


def _parquet_blocks(path: str, column: str) -> Iterator[list[str]]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=_READ_BLOCK, columns=[column]):
        yield [s if isinstance(s, str) else "" for s in batch.column(0).to_pylist()]


def read_blocks(path: str, smiles_column: str = "smiles") -> Iterator[list[str]]:
    """The file's SMILES in blocks of any size, in row order (empty cells as ``""``)."""
    fmt = input_format(path)
    if fmt == "smi":
        return _smi_blocks(path)
    if fmt == "csv":
        return _csv_blocks(path, smiles_column)
    return _parquet_blocks(path, smiles_column)


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
