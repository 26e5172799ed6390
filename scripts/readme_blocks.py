"""The fenced code blocks of README.md and the markers around them.

Used by ``.ci/run`` (which runs the two blocks between ``<!-- ci:NAME -->`` and
``<!-- /ci:NAME -->``) and by ``tests/docs/test_readme.py`` (which runs the others). A
block right after ``<!-- readme-test: skip: REASON -->`` is not run by the tests. Standard
library only: CI calls it before anything is installed.

Usage: ``python3 scripts/readme_blocks.py ci:main-job`` prints that block's code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w*)\s*$")
_CI_OPEN = re.compile(r"^<!-- ci:([\w-]+) -->$")
_CI_CLOSE = re.compile(r"^<!-- /ci:([\w-]+) -->$")
_SKIP = re.compile(r"^<!-- readme-test: skip: (.+?) -->$")


class Block(NamedTuple):
    lang: str  # "bash", "python", ...
    line: int  # 1-based line of the first code line in README.md
    code: str  # without the fences, ending in a newline
    ci: str | None  # "ci:NAME" when between ci markers: run by .ci/run
    skip: str | None  # why the tests do not run it


def readme_blocks(path: str | Path = README) -> list[Block]:
    """Every fenced block of ``path`` in order, with its markers."""
    blocks: list[Block] = []
    ci: str | None = None
    skip: str | None = None
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if match := _CI_OPEN.match(text):
            ci = f"ci:{match.group(1)}"
        elif match := _CI_CLOSE.match(text):
            ci = None
        elif match := _SKIP.match(text):
            skip = match.group(1)
        elif match := _FENCE.match(text):
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise ValueError(f"{path}:{i + 1}: code block never closed")
            code = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(match.group(1), i + 2, code, ci, skip))
            skip = None
            i = end
        i += 1
    return blocks


def ci_block(name: str, path: str | Path = README) -> Block:
    """The one block between the ``name`` markers (e.g. ``"ci:test"``)."""
    found = [b for b in readme_blocks(path) if b.ci == name]
    if len(found) != 1:
        raise ValueError(f"{path}: expected one code block marked {name}, found {len(found)}")
    return found[0]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/readme_blocks.py ci:NAME")
    try:
        sys.stdout.write(ci_block(sys.argv[1]).code)
    except ValueError as error:
        sys.exit(f"readme_blocks: {error}")
