"""The CLI's one input reader: options, and a checked table with the columns a command reads.

``embed``, ``fit``, ``predict``, ``explain`` and ``entropy`` open their input through
:func:`open_input`, which checks the file and the named columns (:mod:`exlm_chem.data.tables`)
before any model is loaded. The table reading itself lives in :mod:`exlm_chem.data.tables`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.data.tables import (
    DEFAULT_CHUNK_SIZE,
    TableInput,
    iter_chunks,
    open_table,
    read_table,
)

__all__ = ["CliInput", "add_feature_columns_argument", "add_input_arguments", "open_input",
           "smiles_cells"]


class CliInput(NamedTuple):
    """A command's checked input: the table, its SMILES column and the other columns read."""

    table: TableInput
    smiles_column: str
    columns: list[str]  # the other columns read (--keep-columns / --target-columns), in order

    def chunks(self, chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[tuple[Any, list[str]]]:
        """``(frame, smiles)`` per chunk: the frame holds the SMILES and the other columns,
        indexed by data row; ``smiles`` is :func:`smiles_cells` of it."""
        for frame in iter_chunks(self.table, [self.smiles_column, *self.columns], chunk_size,
                                 as_written=[self.smiles_column]):
            yield frame, smiles_cells(frame, self.smiles_column)

    def read(self) -> tuple[Any, list[str]]:
        """All rows at once, as one ``(frame, smiles)``."""
        frame = read_table(self.table, [self.smiles_column, *self.columns],
                           as_written=[self.smiles_column])
        return frame, smiles_cells(frame, self.smiles_column)


def open_input(path: str | Path, smiles_column: str = "smiles", columns: Sequence[str] = (),
               option: str = "--keep-columns", encoding: str = "utf-8",
               more: dict[str, Sequence[str]] | None = None) -> CliInput:
    """Open and check a command's input table (:func:`exlm_chem.data.tables.open_table`).

    Parameters
    ----------
    path : path
        CSV, ``.smi`` or Parquet file.
    smiles_column : str
        Must exist (``--smiles-column`` in the error message).
    columns : sequence of str
        Other columns the command reads; each must exist (``option`` names them in the
        error message). Repeats are dropped.
    option : str
        The command-line option that gave ``columns``.
    encoding : str
        Text encoding of a CSV or ``.smi`` file.
    more : dict, optional
        ``{option: columns}`` of other options naming columns (e.g. ``--feature-columns``);
        they are checked and read after ``columns``.
    """
    required = {"--smiles-column": [smiles_column], option: list(columns), **(more or {})}
    table = open_table(path, required, encoding)
    wanted = [c for cols in required.values() for c in cols if c != smiles_column]
    return CliInput(table, smiles_column, list(dict.fromkeys(wanted)))


def smiles_cells(frame: Any, smiles_column: str) -> list[str]:
    """The SMILES of a chunk; an empty cell is what it is, an empty SMILES (``""``)."""
    return [s if s is not None else "" for s in frame[smiles_column]]


def add_input_arguments(parser: Any, keep_columns: bool = True) -> None:
    """The input options ``embed``, ``fit`` and ``predict`` share (cheap: no imports)."""
    parser.add_argument("--smiles-column", default="smiles",
                        help="column holding the SMILES (a .smi file's is 'smiles')")
    if keep_columns:
        parser.add_argument("--keep-columns", nargs="+", default=[],
                            help="input columns to copy to the output (e.g. an id, or the "
                                 "SMILES column itself)")
    parser.add_argument("--encoding", default="utf-8",
                        help="text encoding of a CSV or .smi input (default utf-8; e.g. "
                             "latin-1)")
    parser.add_argument("--fail-on-invalid", action="store_true",
                        help="exit with status 1 if any row is invalid (the output is "
                             "still written, invalid rows marked)")


def add_feature_columns_argument(parser: Any) -> None:
    """``--feature-columns`` of ``predict`` and ``screen``: where a model fitted with
    ``fit --feature-columns`` finds those columns in the input (see
    :func:`exlm_chem.sklearn.prediction.input_feature_columns`)."""
    parser.add_argument("--feature-columns", nargs="+", default=None, metavar="COLUMN",
                        help="for a model fitted with `fit --feature-columns`: the input "
                             "columns holding them, one for each in the order they were "
                             "fitted (default: the columns of the same names)")
