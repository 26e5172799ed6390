"""The one way bad SMILES are reported, wherever they are found."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

_MAX_ROWS_IN_MESSAGE = 50


class InvalidRow(NamedTuple):
    """One input row that is not a usable SMILES: its 0-based position, value and why."""

    row: int
    smiles: Any
    reason: str


class InvalidSmilesError(ValueError):
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
