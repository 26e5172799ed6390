"""The one summary line that ``embed``, ``predict`` and ``fit`` end with.

``predict: read 45 rows from new.csv; wrote 45 rows to pred.csv; 4 invalid (2 SMILES Parse
Error: syntax error, 1 empty SMILES, 1 too long)``. Invalid rows are counted by the kind of
their reason (RDKit's message without the molecule-specific parts); each row's full reason
stays in the output's ``invalid_reason`` column (or the error that ``fit`` raises).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable

# (pattern, replacement) applied in order: what is left names the kind of problem
_KIND_RULES = (
    (re.compile(r"\s+(?:for input|while parsing)\b.*$"), ""),  # the echoed SMILES
    (re.compile(r"\s*\(.*\)$"), ""),  # "too long (2500 characters > 2000)"
    (re.compile(r"\s+for atom # ?\d+ \S+, \d+,"), ""),  # "Explicit valence for atom # 3 N, 4,"
    (re.compile(r"\.\s+Unkekulized atoms:.*$"), ""),
)


def reason_kind(reason: str) -> str:
    """The kind of an invalid-row reason, e.g. ``"SMILES Parse Error: unclosed ring"``."""
    kind = reason.split("; ")[0].strip()
    for pattern, replacement in _KIND_RULES:
        kind = pattern.sub(replacement, kind)
    return kind or reason


class RowTally:
    """Rows read, rows written and invalid rows by kind, for one command run."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.read = 0
        self.written = 0
        self.invalid: Counter[str] = Counter()

    def add(self, read: int, written: int, reasons: Iterable[str | None]) -> None:
        """Count a chunk: rows read, rows written, and one reason (None = valid) per row."""
        self.read += read
        self.written += written
        self.invalid.update(reason_kind(r) for r in reasons if r)

    @property
    def n_invalid(self) -> int:
        return sum(self.invalid.values())

    def line(self, source: str, written: str) -> str:
        """``"<command>: read N rows from <source>; <written>; K invalid (...)"``."""
        kinds = ", ".join(f"{n} {kind}" for kind, n in self.invalid.most_common())
        invalid = f"{self.n_invalid} invalid ({kinds})" if self.n_invalid else "0 invalid"
        return f"{self.command}: read {self.read} rows from {source}; {written}; {invalid}"

    def exit_code(self, fail_on_invalid: bool) -> int:
        """1 (after saying why on stderr) if invalid rows were found and that is an error."""
        if fail_on_invalid and self.n_invalid:
            print(f"exlm-chem {self.command}: {self.n_invalid} of {self.read} rows are "
                  "invalid (--fail-on-invalid); see the line above", file=sys.stderr)
            return 1
        return 0
