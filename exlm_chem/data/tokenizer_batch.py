"""Many SMILES tokenised at once: the code-point fast path of ``batch_encode``.

Batch fast path. The batch is joined with newlines into one string; every
multi-character token is replaced by ONE character whose code point is 128 + its id
(bracket atoms and %nn ring closures by one regex pass, then "Cl" and "Br" by
str.replace, which is safe once the brackets are gone because the replacement
characters are not ASCII). What is left are single-character tokens, so one NumPy
lookup table over code points gives all ids at once. The bracket class excludes the
newline so that an unclosed "[" cannot swallow the next molecule. The path is taken
only for pure-ASCII batches without embedded newlines (no input character can then
collide with a replacement character), which makes the result identical to tokenising
each SMILES on its own; tests check both paths against each other.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from exlm_chem.data.featurize import smiles_sequence

__all__ = ["CHUNK", "CodeTable", "as_smiles_list", "scatter_rows"]

_BRACKET_RE = re.compile(r"\[[^\]\n]+]|%[0-9]{2}")
_CODE_BASE = 128  # replacement code point = _CODE_BASE + token id
_MAX_FAST_VOCAB = 0xD800 - _CODE_BASE  # keeps every replacement one UTF-16 code unit
CHUNK = 1024  # molecules per fast-path pass inside batch_encode
_SEP_SENTINEL = -1  # lookup-table value of the newline that separates molecules
_UNK_SENTINEL = -2  # lookup-table value of an ASCII character missing from the vocabulary


class CodeTable:
    """A vocabulary's replacement characters and code-point lookup table.

    Parameters
    ----------
    encode_map : dict of str to int
        Token -> id of the tokens that text may encode to (no special tokens).
    vocab_size : int
    unk_id : int
    """

    def __init__(self, encode_map: dict[str, int], vocab_size: int, unk_id: int) -> None:
        self.enabled = vocab_size <= _MAX_FAST_VOCAB
        self.unk_id = unk_id
        self.code_of = {tok: chr(_CODE_BASE + i) for tok, i in encode_map.items() if len(tok) > 1}
        lut = np.full(_CODE_BASE + vocab_size, _UNK_SENTINEL, dtype=np.int64)
        for code in range(_CODE_BASE):
            lut[code] = encode_map.get(chr(code), _UNK_SENTINEL)
        lut[ord("\n")] = _SEP_SENTINEL
        lut[_CODE_BASE:] = np.arange(vocab_size)
        self.lut = lut

    def batch_ids(self, smiles: list[str],
                  found: Counter[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Token ids of all molecules, concatenated (int64 [T]), and per-molecule counts [B].

        Unknown tokens are counted into ``found`` and encoded as ``unk_id``. None when the
        fast path does not apply (an empty batch, a non-ASCII character, an embedded
        newline, a vocabulary too large); then the caller tokenises one SMILES at a time.
        """
        joined = "\n".join(smiles)
        if not (smiles and self.enabled and joined.isascii()
                and joined.count("\n") == len(smiles) - 1):
            return None
        code_of = self.code_of
        unk_char = chr(_CODE_BASE + self.unk_id)

        def replace(match: re.Match[str]) -> str:
            tok = match.group()
            char = code_of.get(tok)
            if char is None:
                found[tok] += 1
                return unk_char
            return char

        coded = _BRACKET_RE.sub(replace, joined)
        for pair in ("Cl", "Br"):
            char = code_of.get(pair)
            if char is None:
                seen = coded.count(pair)
                if not seen:
                    continue
                found[pair] += seen
                char = unk_char
            coded = coded.replace(pair, char)
        ids = self.lut[np.frombuffer(coded.encode("utf-16-le"), dtype=np.uint16)]
        unknown = ids == _UNK_SENTINEL
        if unknown.any():
            found.update(coded[pos] for pos in np.flatnonzero(unknown).tolist())
            ids[unknown] = self.unk_id
        is_sep = ids == _SEP_SENTINEL
        bounds = np.flatnonzero(is_sep)  # [B - 1] separator positions
        counts = np.diff(bounds, prepend=-1, append=ids.size) - 1
        return ids[~is_sep], counts


def scatter_rows(
    rows: np.ndarray, flat: np.ndarray, counts: np.ndarray, limit: int | None, offset: int
) -> None:
    """Write each molecule's ids (``flat``, concatenated) into its row, from column ``offset``.

    ``rows`` is a C-contiguous [b, N] block; ``counts`` [b] holds the token count of each
    molecule; tokens at position ``limit`` or later within their molecule are dropped.
    """
    batch, width = rows.shape
    # flat index of token j: j - (index of its molecule's first token) + row start + offset
    starts = np.arange(batch) * width + offset  # [b]
    firsts = np.cumsum(counts) - counts  # [b]
    dest = np.arange(flat.size) + np.repeat(starts - firsts, counts)  # [T]
    if limit is not None:
        keep = dest - np.repeat(starts, counts) < limit
        dest, flat = dest[keep], flat[keep]
    np.put(rows, dest, flat)  # flat indices into rows, written in place


def as_smiles_list(smiles_list: object) -> list[str]:
    smiles_sequence(smiles_list, "smiles_list")
    smiles = smiles_list.tolist() if hasattr(smiles_list, "tolist") else list(smiles_list)
    for row, value in enumerate(smiles):
        if not isinstance(value, str):
            raise TypeError(
                f"row {row}: SMILES must be a str, got {type(value).__name__}: {value!r}"
            )
    return smiles
