"""The vocabulary file: one token per line, line number = id, read and checked."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

__all__ = ["PACKAGED_VOCAB", "parse_vocab", "read_vocabulary"]

PACKAGED_VOCAB = "data/vocab.txt"  # inside the exlm_chem package


def read_vocabulary(vocab_file: str | Path | None,
                    special: Sequence[str]) -> tuple[list[str], str]:
    """The checked tokens of a vocabulary file and where they came from.

    Parameters
    ----------
    vocab_file : str or Path or None
        A file, a directory holding ``vocab.txt``, or None for the packaged vocabulary.
    special : sequence of str
        The special tokens the file must start with.

    Returns
    -------
    tokens : list of str
    source : str
        The file's path (for messages).
    """
    if vocab_file is None:
        text = resources.files("exlm_chem").joinpath(PACKAGED_VOCAB).read_text("utf-8")
        source = f"exlm_chem/{PACKAGED_VOCAB}"
    else:
        path = _vocab_path(vocab_file)
        text = path.read_text(encoding="utf-8")
        source = str(path)
    return parse_vocab(text, source, special), source


def _vocab_path(vocab_file: str | Path) -> Path:
    path = Path(vocab_file)
    if path.is_dir():
        path = path / "vocab.txt"
    if not path.is_file():
        raise FileNotFoundError(f"vocabulary file not found: {path}")
    return path


def parse_vocab(text: str, source: str, special: Sequence[str]) -> list[str]:
    """The tokens of a vocabulary file's text, one per line, checked: no empty or padded
    token, no duplicate, the ``special`` tokens first and in order."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    seen: dict[str, int] = {}
    for number, token in enumerate(lines, start=1):
        if token == "" or token != token.strip():
            raise ValueError(f"{source}, line {number}: empty token or surrounding whitespace")
        if token in seen:
            raise ValueError(
                f"{source}, line {number}: duplicate token {token!r} (first on line {seen[token]})"
            )
        seen[token] = number
    head = tuple(lines[: len(special)])
    if head != tuple(special):
        raise ValueError(
            f"{source}: the first lines must be the special tokens {list(special)} "
            f"in this order, found {list(head)}"
        )
    return lines
