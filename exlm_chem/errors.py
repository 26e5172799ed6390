"""The package's own error types: one per kind of failure, each naming the file or row.

Every error here derives from :class:`ExlmChemError`, so the command line can tell a
problem with the user's input (one line, exit code 2) from a bug (a traceback). Each also
derives from the built-in type code written before it existed catches (``ValueError``
or ``OSError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

_MAX_ROWS_IN_MESSAGE = 50


class ExlmChemError(Exception):
    """Base of every error exlm_chem raises on purpose about the user's files or inputs."""


class CheckpointError(ExlmChemError, ValueError):
    """A checkpoint or saved-model directory is incomplete, corrupt or inconsistent.

    The message names the file and what is wrong with it.
    """


class CheckpointFilesMissingError(CheckpointError, FileNotFoundError):
    """A checkpoint directory lacks some of its files (also a ``FileNotFoundError``)."""


class DataFileError(ExlmChemError, ValueError):
    """A data file cannot be read: truncated, not the expected encoding, empty, malformed."""


class OutputPathError(ExlmChemError, OSError):
    """An output location is refused (it holds other files) or cannot be written."""


class InvalidRow(NamedTuple):
    """One input row that is not a usable SMILES: its 0-based position, value and why."""

    row: int
    smiles: Any
    reason: str


class InvalidSmilesError(ExlmChemError, ValueError):
    """Some input rows are not valid SMILES; ``.rows`` lists every one of them.

    ``rows`` may be :class:`InvalidRow` records or plain ``(row, value, reason)`` tuples.
    """

    def __init__(self, rows: Sequence[InvalidRow | tuple], action: str = "") -> None:
        self.rows: tuple[InvalidRow, ...] = tuple(InvalidRow(*r) for r in rows)
        self.action = action
        shown = "\n".join(
            f"  row {r.row}: {r.smiles!r:.80}: {r.reason}" for r in self.rows[:_MAX_ROWS_IN_MESSAGE]
        )
        more = len(self.rows) - _MAX_ROWS_IN_MESSAGE
        tail = f"\n  ... and {more} more (see the error's .rows)" if more > 0 else ""
        what = f" {action}" if action else ""
        super().__init__(
            f"{len(self.rows)} invalid SMILES{what}; remove or fix these rows "
            f"(0-based positions in the input):\n{shown}{tail}"
        )

    def __reduce__(self) -> tuple[type, tuple[tuple[InvalidRow, ...], str]]:
        # keeps the error picklable (it may cross a process boundary)
        return (type(self), (self.rows, self.action))
