"""``exlm-chem embed``: a table of SMILES -> one embedding row per input row.

The input (CSV, ``.smi`` or Parquet; see :mod:`exlm_chem.data.tables`) is read in chunks
and the output written chunk by chunk, so memory stays flat however long the file is.
The output appears only when complete (temporary name, renamed at the end).

Output formats, chosen by the suffix of ``--out``:

- ``.parquet`` / ``.csv``: columns ``row`` (0-based data row of the input), the
  ``--keep-columns`` (copied verbatim, as text), ``valid``, ``invalid_reason`` and
  ``emb_0 .. emb_{d-1}`` (float32; NaN on invalid rows).
- ``.npy``: the bare ``[rows, d]`` float32 matrix, row i = input row i, NaN rows where
  invalid (``valid = ~np.isnan(X).any(axis=1)``). It is written through a memory map of
  known shape (the rows are counted when the input is opened).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exlm_chem.cli.base import MODEL_HELP, Subcommand, add_run_options
from exlm_chem.cli.inputs import add_input_arguments, open_input
from exlm_chem.files.safe_write import check_output_file
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS
from exlm_chem.threads import set_threads

FORMATS = (".parquet", ".csv", ".npy")


def _embedding_frame(start: int, kept: dict[str, Any], chunk: Any, emb_columns: list[str]):
    import numpy as np
    import pandas as pd

    n = len(chunk.valid)
    frame = pd.DataFrame({"row": np.arange(start, start + n, dtype=np.int64), **kept,
                          "valid": np.asarray(chunk.valid, dtype=bool),
                          "invalid_reason": [r or "" for r in chunk.reasons]})
    emb = pd.DataFrame(chunk.values, columns=emb_columns)  # [n, d] float32
    return pd.concat([frame, emb], axis=1)


def export_embeddings(
    input_path: str | Path,
    out: str | Path,
    smiles_column: str = "smiles",
    model: str | Path = "default",
    pooling: str = DEFAULT_POOLING,
    batch_size: int | None = None,
    chunk_size: int | None = None,
    keep_columns: Sequence[str] = (),
    max_length: int = 256,
    device: str = "auto",
    progress: bool = True,
    encoding: str = "utf-8",
) -> Any:
    """Embed the SMILES column of a table into ``out`` (.parquet, .csv or .npy).

    Parameters
    ----------
    input_path : path
        CSV (any compression pandas reads), ``.smi`` or Parquet file with a
        ``smiles_column``.
    out : path
        Output file; its suffix picks the format (see the module docstring).
    model, pooling, batch_size, max_length, device
        As in :func:`exlm_chem.embedding.embed`.
    chunk_size : int, optional
        Rows read, embedded and written at a time (default 8192).
    keep_columns : sequence of str
        Input columns copied to a table output.
    progress : bool
        tqdm bar over rows.
    encoding : str
        Text encoding of a CSV or ``.smi`` input.

    Returns
    -------
    exlm_chem.cli.tally.RowTally
        Rows read and written, invalid rows by reason.
    """
    from tqdm.auto import tqdm

    from exlm_chem.cli.outputs import (
        RESERVED_COLUMNS,
        NpySink,
        TableSink,
        output_format,
    )
    from exlm_chem.cli.tally import RowTally
    from exlm_chem.embedding import DEFAULT_BATCH_SIZE, DEFAULT_CHUNK_SIZE
    from exlm_chem.files.safe_write import atomic_path
    from exlm_chem.model.molecule_model import MoleculeModel

    out = Path(out)
    fmt = output_format(out, FORMATS)
    keep_columns = list(dict.fromkeys(keep_columns))
    if keep_columns and fmt == ".npy":
        raise ValueError("--keep-columns needs a table output (.parquet or .csv), not .npy")
    clash = [c for c in keep_columns if c in RESERVED_COLUMNS or c.startswith("emb_")]
    if clash:
        raise ValueError(f"--keep-columns {clash} clash with output columns "
                         f"{', '.join(RESERVED_COLUMNS)}, emb_*")
    check_output_file(out)  # before any embedding: a result that cannot be written is lost
    chunk_size = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    for name, value in (("--chunk-size", chunk_size), ("--batch-size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    rows = open_input(input_path, smiles_column, keep_columns, encoding=encoding)
    table = rows.table
    net = MoleculeModel.from_checkpoint(model, pooling, device, max_length)
    tally = RowTally("embed")
    emb_columns = [f"emb_{j}" for j in range(net.dim)]
    with atomic_path(out) as tmp, \
            tqdm(total=table.n_rows, unit="mol", desc="embed", disable=not progress) as bar:
        if fmt == ".npy":
            sink: Any = NpySink(tmp, table.n_rows, net.dim)
        else:
            sink = TableSink(tmp, fmt, {"row": "int64", **dict.fromkeys(keep_columns, "string"),
                                        "valid": "bool", "invalid_reason": "string",
                                        **dict.fromkeys(emb_columns, "float32")})
        try:
            for frame, smiles in rows.chunks(chunk_size):
                chunk = net.embed(smiles, batch_size, on_batch=bar.update)
                if fmt == ".npy":
                    sink.write(tally.written, chunk.values)
                else:
                    kept = {c: frame[c].to_numpy(dtype=object) for c in keep_columns}
                    sink.write(_embedding_frame(tally.written, kept, chunk, emb_columns))
                tally.add(len(smiles), len(smiles), chunk.reasons)
        finally:
            sink.close()
        if tally.written != table.n_rows:
            raise RuntimeError(f"{input_path} changed while it was read: counted "
                               f"{table.n_rows} rows, embedded {tally.written}")
    return tally


class EmbedCommand(Subcommand):
    name = "embed"
    help = "export SMILES embeddings (one row per input row; NaN where invalid)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("input", help="molecules: .csv[.gz], .smi[.gz] or .parquet")
        parser.add_argument("--model", default="default", help=MODEL_HELP)
        parser.add_argument("--out", required=True,
                            help="output file: .parquet, .csv or .npy (bare matrix)")
        add_input_arguments(parser)
        parser.add_argument("--pooling", choices=POOLINGS, default=DEFAULT_POOLING,
                            help="mean: mean over tokens; bos: first BOS state (the paper's "
                                 "fine-tuning pooling); default %(default)s")
        parser.add_argument("--batch-size", type=int, default=None,
                            help="molecules per forward pass (default 128)")
        parser.add_argument("--chunk-size", type=int, default=None,
                            help="input rows read and written at a time (default 8192)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="tokens per molecule incl. BOS/EOS; longer ones truncated")
        add_run_options(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        set_threads(args.threads)
        tally = export_embeddings(
            args.input, args.out, smiles_column=args.smiles_column, model=args.model,
            pooling=args.pooling, batch_size=args.batch_size, chunk_size=args.chunk_size,
            keep_columns=args.keep_columns, max_length=args.max_length, device=args.device,
            progress=args.progress, encoding=args.encoding,
        )
        print(tally.line(args.input, f"wrote {tally.written} rows to {args.out}"))
        return tally.exit_code(args.fail_on_invalid)
