"""``exlm-chem embed``: a CSV of SMILES -> one embedding row per input row.

The CSV is read in chunks and the output written chunk by chunk, so memory stays flat
however long the file is. The output appears only when complete: it is written under a
temporary name in the target's folder and renamed at the end.

Output formats, chosen by the suffix of ``--out``:

- ``.parquet`` / ``.csv``: columns ``row`` (0-based data row of the input), the
  ``--keep-columns`` (copied verbatim, as text), ``valid``, ``invalid_reason`` and
  ``emb_0 .. emb_{d-1}`` (float32; NaN on invalid rows).
- ``.npy``: the bare ``[rows, d]`` float32 matrix, row i = input row i, NaN rows where
  invalid (``valid = ~np.isnan(X).any(axis=1)``). It is written through a memory map of
  known shape, so the rows are counted in a first, cheap pass over the SMILES column.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exlm_chem.cli.base import Subcommand
from exlm_chem.safe_write import atomic_file, check_output_file
from exlm_chem.threads import add_threads_option, set_threads

FORMATS = (".parquet", ".csv", ".npy")
RESERVED_COLUMNS = ("row", "valid", "invalid_reason")


def csv_columns(path: str | Path) -> list[str]:
    """Header of a CSV file (any compression pandas reads)."""
    import pandas as pd

    return [str(c) for c in pd.read_csv(path, nrows=0).columns]


def require_columns(path: str | Path, wanted: Sequence[str], what: str) -> list[str]:
    """The CSV's columns; a clear ``ValueError`` naming them if any of ``wanted`` is missing."""
    columns = csv_columns(path)
    missing = [c for c in wanted if c not in columns]
    if missing:
        raise ValueError(f"{what} {', '.join(map(repr, missing))} not found in {path}; its "
                         f"columns are: {', '.join(columns)}")
    return columns


def count_rows(path: str | Path, column: str, chunk_size: int = 200_000) -> int:
    """Data rows of a CSV, reading only ``column`` (a cheap pass)."""
    import pandas as pd

    return sum(len(c) for c in pd.read_csv(path, usecols=[column], dtype=str,
                                           chunksize=chunk_size))


# a temporary name beside the output, renamed at the end; a killed run's leftovers are
# removed by the next run writing the same output
atomic_output = atomic_file


class TableSink:
    """Parquet or CSV written one DataFrame chunk at a time, with fixed column types.

    ``columns`` maps each output column to ``"int64"``, ``"bool"``, ``"string"``,
    ``"float32"`` or ``"float64"``. The Parquet schema is fixed up front: a chunk whose
    text column is all missing must not become a null-typed column that the writer
    would reject.
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


def _embedding_frame(start: int, kept: dict[str, Any], chunk: Any, emb_columns: list[str]):
    import numpy as np
    import pandas as pd

    n = len(chunk.valid)
    frame = pd.DataFrame({"row": np.arange(start, start + n, dtype=np.int64), **kept,
                          "valid": np.asarray(chunk.valid, dtype=bool),
                          "invalid_reason": [r or "" for r in chunk.reasons]})
    emb = pd.DataFrame(chunk.embeddings, columns=emb_columns)  # [n, d] float32
    return pd.concat([frame, emb], axis=1)


class _NpySink:
    """A ``.npy`` of known shape, filled through a memory map."""

    def __init__(self, path: Path, n_rows: int, dim: int) -> None:
        import numpy as np

        self._array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                                shape=(n_rows, dim))

    def write(self, start: int, chunk: Any) -> None:
        n = len(chunk.valid)
        if start + n > self._array.shape[0]:
            raise RuntimeError("the input grew while it was being embedded")
        self._array[start : start + n] = chunk.embeddings

    def close(self) -> None:
        self._array.flush()
        del self._array


def export_embeddings(
    input_csv: str | Path,
    out: str | Path,
    smiles_column: str = "smiles",
    model: str | Path = "default",
    pooling: str = "bos",
    batch_size: int | None = None,
    chunk_size: int | None = None,
    keep_columns: Sequence[str] = (),
    max_length: int = 256,
    device: str = "auto",
    progress: bool = True,
) -> int:
    """Embed the SMILES column of a CSV into ``out`` (.parquet, .csv or .npy).

    Parameters
    ----------
    input_csv : path
        CSV (any compression pandas reads) with a ``smiles_column``.
    out : path
        Output file; its suffix picks the format (see the module docstring).
    model, pooling, batch_size, max_length, device
        As in :func:`exlm_chem.embed.embed`.
    chunk_size : int, optional
        CSV rows read, embedded and written at a time (default 8192).
    keep_columns : sequence of str
        Input columns copied to a table output.
    progress : bool
        tqdm bar over rows.

    Returns
    -------
    int
        Rows written (= data rows of the input).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    from exlm_chem.embed import DEFAULT_BATCH_SIZE, DEFAULT_CHUNK_SIZE, Embedder

    out = Path(out)
    fmt = out.suffix.lower()
    if fmt not in FORMATS:
        raise ValueError(f"--out must end in one of {', '.join(FORMATS)}, got {out.name!r}")
    keep_columns = list(keep_columns)
    if keep_columns and fmt == ".npy":
        raise ValueError("--keep-columns needs a table output (.parquet or .csv), not .npy")
    clash = [c for c in keep_columns if c in RESERVED_COLUMNS or c.startswith("emb_")]
    if clash:
        raise ValueError(f"--keep-columns {clash} clash with output columns "
                         f"{', '.join(RESERVED_COLUMNS)}, emb_*")
    check_output_file(out)  # before any embedding: a result that cannot be written is lost
    require_columns(input_csv, [smiles_column], "--smiles-column")
    require_columns(input_csv, keep_columns, "--keep-columns")
    chunk_size = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    for name, value in (("--chunk-size", chunk_size), ("--batch-size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")

    embedder = Embedder.from_checkpoint(model, device=device)
    n_rows = count_rows(input_csv, smiles_column)  # progress total; the .npy shape
    # everything as text: SMILES must not become floats, kept columns are copied verbatim
    # (and one dtype across chunks keeps the Parquet schema fixed)
    columns = list(dict.fromkeys([smiles_column, *keep_columns]))
    reader = pd.read_csv(input_csv, usecols=columns, dtype=str, chunksize=chunk_size)

    with atomic_output(out) as tmp, \
            tqdm(total=n_rows, unit="mol", desc="embed", disable=not progress) as bar:
        emb_columns = [f"emb_{j}" for j in range(embedder.dim)]
        if fmt == ".npy":
            sink: Any = _NpySink(tmp, n_rows, embedder.dim)
        else:
            sink = TableSink(tmp, fmt, {"row": "int64", **dict.fromkeys(keep_columns, "string"),
                                        "valid": "bool", "invalid_reason": "string",
                                        **dict.fromkeys(emb_columns, "float32")})
        written = 0
        try:
            for frame in reader:
                # an empty cell arrives as NaN: call it what it is, an empty SMILES
                smiles = [s if isinstance(s, str) else "" for s in frame[smiles_column]]
                chunk = embedder.embed_rows(smiles, pooling, batch_size, max_length,
                                            on_batch=bar.update)
                if fmt == ".npy":
                    sink.write(written, chunk)
                else:
                    kept = {c: frame[c].to_numpy(dtype=object) for c in keep_columns}
                    sink.write(_embedding_frame(written, kept, chunk, emb_columns))
                written += len(smiles)
        finally:
            sink.close()
        if written != n_rows:
            raise RuntimeError(f"{input_csv} changed while it was read: counted {n_rows} "
                               f"rows, embedded {written}")
    return written


class EmbedCommand(Subcommand):
    name = "embed"
    help = "export SMILES embeddings (one row per input row; NaN where invalid)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("input", help="CSV file with a SMILES column (.csv or .csv.gz)")
        parser.add_argument("--smiles-column", default="smiles")
        parser.add_argument("--model", default="default",
                            help="checkpoint directory (default: $EXLM_CHEM_MODEL, then "
                                 "models/exlm-small)")
        parser.add_argument("--out", required=True,
                            help="output file: .parquet, .csv or .npy (bare matrix)")
        parser.add_argument("--pooling", choices=("bos", "mean"), default="bos",
                            help="bos: first BOS state (what fine-tuning uses); mean: "
                                 "mean over tokens")
        parser.add_argument("--batch-size", type=int, default=None,
                            help="molecules per forward pass (default 128)")
        parser.add_argument("--chunk-size", type=int, default=None,
                            help="CSV rows read and written at a time (default 8192)")
        parser.add_argument("--keep-columns", nargs="+", default=[],
                            help="input columns to copy to the output (e.g. an id, or the "
                                 "SMILES column itself)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="tokens per molecule incl. BOS/EOS; longer ones truncated")
        parser.add_argument("--device", default="auto", help="auto | cpu | cuda[:i]")
        add_threads_option(parser)
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        set_threads(args.threads)
        n = export_embeddings(
            args.input, args.out, smiles_column=args.smiles_column, model=args.model,
            pooling=args.pooling, batch_size=args.batch_size, chunk_size=args.chunk_size,
            keep_columns=args.keep_columns, max_length=args.max_length, device=args.device,
            progress=args.progress,
        )
        print(f"wrote {n} rows to {args.out}")
        return 0
