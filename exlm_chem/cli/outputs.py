"""Row-aligned output tables of ``embed`` and ``predict``: Parquet, CSV or ``.npy``.

Outputs are written chunk by chunk under a temporary name beside the target and renamed
at the end (:func:`exlm_chem.files.safe_write.atomic_path`), so a failed run leaves no half
file and the previous output stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RESERVED_COLUMNS = ("row", "valid", "invalid_reason")
COLUMN_TYPES = ("int64", "bool", "string", "float32", "float64")


def output_format(out: str | Path, allowed: tuple[str, ...]) -> str:
    """The suffix of ``out`` (lower case) if it is one of ``allowed``, else a clear error."""
    fmt = Path(out).suffix.lower()
    if fmt not in allowed:
        raise ValueError(f"--out must end in one of {', '.join(allowed)}, got "
                         f"{Path(out).name!r}")
    return fmt


class TableSink:
    """Parquet or CSV written one DataFrame chunk at a time, with fixed column types.

    ``columns`` maps each output column to one of :data:`COLUMN_TYPES`. The Parquet schema
    is fixed up front: a chunk whose text column is all missing must not become a
    null-typed column that the writer would reject.
    """

    def __init__(self, path: Path, fmt: str, columns: dict[str, str]) -> None:
        self.path = path
        self.fmt = fmt
        self.columns = dict(columns)
        self._writer: Any = None  # pyarrow ParquetWriter, opened on the first chunk
        self._rows = 0
        if fmt == ".parquet":
            import pyarrow as pa

            types = {"int64": pa.int64(), "bool": pa.bool_(), "string": pa.string(),
                     "float32": pa.float32(), "float64": pa.float64()}
            self._schema = pa.schema([(c, types[t]) for c, t in self.columns.items()])

    def write(self, frame: Any) -> None:
        """Append a DataFrame holding exactly ``columns``, in that order."""
        if list(frame.columns) != list(self.columns):
            raise ValueError(f"chunk columns {list(frame.columns)[:5]}... do not match the "
                             "output's")
        if self.fmt == ".csv":
            frame.to_csv(self.path, mode="w" if self._rows == 0 else "a",
                         header=self._rows == 0, index=False)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, self._schema)
            self._writer.write_table(table)
        self._rows += len(frame)

    def close(self) -> None:
        if self.fmt == ".parquet" and self._writer is None:  # no chunk came: header only
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self.path, self._schema)
        if self.fmt == ".csv" and self._rows == 0:
            import pandas as pd

            pd.DataFrame(columns=list(self.columns)).to_csv(self.path, index=False)
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class NpySink:
    """A ``.npy`` of known shape ``[n_rows, dim]`` float32, filled through a memory map."""

    def __init__(self, path: Path, n_rows: int, dim: int) -> None:
        import numpy as np

        self._array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                                shape=(n_rows, dim))

    def write(self, start: int, rows: Any) -> None:
        """Rows ``start .. start + len(rows)`` (a [n, dim] array)."""
        n = len(rows)
        if start + n > self._array.shape[0]:
            raise RuntimeError("the input grew while it was being read")
        self._array[start : start + n] = rows

    def close(self) -> None:
        self._array.flush()
        del self._array
