"""sha256 checksums: of a file's bytes, and of a JSON value in one canonical text.

Corpus files, prepared arrays and checkpoint weights are checked by their bytes; a
checkpoint's config and a vocabulary by their canonical JSON, which does not depend on
how the file holding them was formatted.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["file_sha256", "json_sha256", "vocab_sha256"]

_BLOCK = 1 << 20  # bytes read at a time: a corpus file never has to fit in memory


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of the file's bytes, as ``sha256sum`` prints it."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def json_sha256(obj: Any) -> str:
    """Hex sha256 of ``obj`` as compact JSON with sorted keys and ASCII escapes, so equal
    values give equal checksums whatever their key order or Python version.

    Examples
    --------
    >>> json_sha256({"b": 1, "a": [2]}) == json_sha256({"a": [2], "b": 1})
    True
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def vocab_sha256(tokens: Sequence[str]) -> str:
    """Hex sha256 of a vocabulary: its tokens in id order, as canonical JSON (a list).

    Token ids mean the same only under the same list; checkpoints, prepared corpora and
    prepared benchmark splits all record this value.
    """
    return json_sha256(list(tokens))
