"""Atom-level SMILES tokenizer (Schwaller et al., 2018) with a packaged vocabulary.

The token boundaries are those of the regular expression of Schwaller et al. (2018),
``SCHWALLER_PATTERN``. Unlike a bare ``re.findall`` with that pattern, no character is
ever dropped: a character the pattern does not cover becomes a token of its own (and so
``[UNK]`` when it is not in the vocabulary), hence ``"".join(tokenize(s)) == s`` always.

Special tokens have fixed ids: ``[CLS]`` = 0 (BOS), ``[PAD]`` = 1, ``[SEP]`` = 2 (EOS),
``[UNK]`` = 3, ``[MASK]`` = 4. Special tokens never come from text: a SMILES holding
``[MASK]`` encodes it as ``[UNK]``. The packaged vocabulary (``exlm_chem/data/vocab.txt``,
one token per line, line number = id) is built by ``scripts/build_vocab.py``.

This module must stay light: it imports NumPy but never torch or RDKit.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.tokenizer_batch import CHUNK, CodeTable, as_smiles_list, scatter_rows
from exlm_chem.data.vocabulary import read_vocabulary

__all__ = [
    "SCHWALLER_PATTERN",
    "SPECIAL_TOKENS",
    "TOKEN_PATTERN",
    "EncodedBatch",
    "SmilesTokenizer",
    "tokenize_smiles",
]

#: The literal atom-level regex of Schwaller et al. (2018), kept for reference and tests.
SCHWALLER_PATTERN = (
    r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|\/|:|~|@|\?|>|\*|\$|"
    r"\%[0-9]{2}|[0-9])"
)

#: The pattern actually used. Every single-character token of ``SCHWALLER_PATTERN`` is
#: the character itself, so one catch-all ``.`` (with DOTALL) replaces the 30 literal
#: alternatives and also turns uncovered characters into tokens instead of skipping
#: them. The leading class lets the common characters, which can never start a
#: multi-character token, match on the first branch. On strings the literal pattern
#: covers completely, the tokens are identical (tests/unit/data/test_tokenizer.py checks this
#: on a corpus sample).
TOKEN_PATTERN = r"[^\[BC%]|Cl?|\[[^\]]+]|Br?|%[0-9]{2}|."

#: Special tokens in id order; the ids are fixed and every vocabulary starts with them.
SPECIAL_TOKENS = ("[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]")

_TOKEN_RE = re.compile(TOKEN_PATTERN, re.DOTALL)


def tokenize_smiles(smiles: str) -> list[str]:
    """Split a SMILES string into Schwaller tokens; ``"".join(result) == smiles``.

    Needs no vocabulary (``scripts/build_vocab.py`` uses it to count tokens).
    """
    _check_str(smiles)
    return _TOKEN_RE.findall(smiles)


class EncodedBatch(NamedTuple):
    """A padded batch of token ids.

    Attributes
    ----------
    input_ids : numpy.ndarray
        int64 [B, N]; each row is ``BOS tokens... EOS`` (when special tokens are added)
        followed by ``pad_id`` up to N.
    lengths : numpy.ndarray
        int64 [B]; number of non-padding ids of each row, special tokens included.
    """

    input_ids: np.ndarray
    lengths: np.ndarray


class SpecialTokenIds:
    """The special-token ids every exlm_chem tokenizer shares (SMILES and text)."""

    bos_id = 0  # [CLS]
    pad_id = 1  # [PAD]
    eos_id = 2  # [SEP]
    unk_id = 3  # [UNK]
    mask_id = 4  # [MASK]
    special_ids = frozenset(range(len(SPECIAL_TOKENS)))


class SmilesTokenizer(SpecialTokenIds):
    """Atom-level SMILES tokenizer with a fixed vocabulary.

    Parameters
    ----------
    vocab_file : str or Path or None
        Vocabulary file (one token per line, line number = id, the five special tokens
        first), or a directory holding ``vocab.txt``. ``None`` loads the vocabulary
        shipped with the package.

    Attributes
    ----------
    tokens : list of str
        id -> token.
    token_to_id : dict of str to int
        token -> id.
    bos_id, pad_id, eos_id, unk_id, mask_id : int
        Fixed special ids 0, 1, 2, 3, 4.
    special_ids : frozenset of int
        The five special ids.
    vocab_size : int
        Number of tokens, specials included.
    unknown_token_counts : collections.Counter
        How often each out-of-vocabulary token string was seen by ``encode`` and
        ``batch_encode`` (counted before truncation). Clear with ``reset_unknown_counts``.
    """

    def __init__(self, vocab_file: str | Path | None = None) -> None:
        self._setup(*read_vocabulary(vocab_file, SPECIAL_TOKENS))
        self.unknown_token_counts: Counter[str] = Counter()

    def _setup(self, tokens: list[str], source: str) -> None:
        self.vocab_file = source
        self.tokens = list(tokens)
        self.token_to_id = {tok: i for i, tok in enumerate(self.tokens)}
        self.vocab_size = len(self.tokens)
        # Private maps for encoding. They leave out the special tokens: text such as
        # "[MASK]" or "[PAD]" in a SMILES is data, never a control token, so it encodes
        # as [UNK] (and is counted). Being copies, they also cannot be desynchronised by
        # a caller mutating the public attributes.
        self._token_to_id = dict(self.token_to_id)
        self._encode_map = {
            tok: i for i, tok in enumerate(self.tokens) if i not in self.special_ids
        }
        self._id_to_token = tuple(self.tokens)
        self._codes = CodeTable(self._encode_map, self.vocab_size, self.unk_id)

    @classmethod
    def from_file(cls, path: str | Path) -> SmilesTokenizer:
        """Load a tokenizer from a vocabulary file or a directory holding ``vocab.txt``."""
        return cls(path)

    def save_vocabulary(self, path: str | Path) -> Path:
        """Write the vocabulary (one token per line, line number = id).

        Parameters
        ----------
        path : str or Path
            Target file, or an existing directory (then ``vocab.txt`` inside it).

        Returns
        -------
        Path
            The file written.
        """
        target = Path(path)
        if target.is_dir():
            target = target / "vocab.txt"
        target.write_text("".join(f"{tok}\n" for tok in self._id_to_token), encoding="utf-8")
        return target

    def tokenize(self, smiles: str) -> list[str]:
        """Split a SMILES string into tokens; ``"".join(result) == smiles``."""
        return tokenize_smiles(smiles)

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Map a token (-> int) or tokens (-> list) to ids; unknown -> ``unk_id``.

        Unlike ``encode``, special token strings map to their ids (``"[MASK]"`` -> 4)
        and ``unknown_token_counts`` is not updated.
        """
        get = self._token_to_id.get
        if isinstance(tokens, str):
            return get(tokens, self.unk_id)
        return [get(tok, self.unk_id) for tok in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Map an id (-> str) or ids (-> list) to tokens; out-of-range ids raise."""
        if isinstance(ids, (int, np.integer)):
            return self._id_to_token[self._checked_ids([int(ids)])[0]]
        return [self._id_to_token[i] for i in self._checked_ids(ids)]

    def encode(
        self,
        smiles: str,
        add_special_tokens: bool = True,
        max_length: int | None = None,
        strict: bool = False,
    ) -> list[int]:
        """Encode one SMILES string.

        Parameters
        ----------
        smiles : str
            The SMILES string.
        add_special_tokens : bool
            Wrap the ids as ``[bos_id, ..., eos_id]``.
        max_length : int or None
            Truncate to at most this many ids. With special tokens the EOS is always
            kept (tokens before it are dropped), so ``max_length`` must be >= 2.
        strict : bool
            Raise instead of mapping out-of-vocabulary tokens to ``unk_id``.

        Returns
        -------
        list of int

        Raises
        ------
        TypeError
            ``smiles`` is not a str.
        ValueError
            ``max_length`` is too small, or ``strict`` and a token is unknown.
        """
        _check_str(smiles)
        limit = None if max_length is None else _content_limit(max_length, add_special_tokens)
        ids, unknown = self._lookup(_TOKEN_RE.findall(smiles))
        if unknown:
            self._record_unknown(Counter(unknown), strict, where=f"SMILES {smiles!r}")
        if limit is not None:
            del ids[limit:]
        if add_special_tokens:
            return [self.bos_id, *ids, self.eos_id]
        return ids

    def batch_encode(
        self,
        smiles_list: Sequence[str],
        max_length: int | None = None,
        pad_to_multiple_of: int | None = None,
        add_special_tokens: bool = True,
        strict: bool = False,
    ) -> EncodedBatch:
        """Encode a batch of SMILES into a padded id matrix.

        Row ``i`` equals ``encode(smiles_list[i], add_special_tokens, max_length)``
        followed by ``pad_id``. The batch is padded to its longest row, rounded up to a
        multiple of ``pad_to_multiple_of`` if given.

        Parameters
        ----------
        smiles_list : sequence of str
            SMILES strings (a list, tuple, NumPy array or pandas Series).
        max_length : int or None
            Per-row truncation, as in ``encode`` (EOS is kept).
        pad_to_multiple_of : int or None
            Round the padded width N up to a multiple of this.
        add_special_tokens : bool
            Add BOS and EOS to every row.
        strict : bool
            Raise instead of mapping out-of-vocabulary tokens to ``unk_id``.

        Returns
        -------
        EncodedBatch
            ``input_ids`` int64 [B, N] and ``lengths`` int64 [B].
        """
        smiles = as_smiles_list(smiles_list)
        limit = _content_limit(max_length, add_special_tokens)
        if pad_to_multiple_of is not None and (
            not isinstance(pad_to_multiple_of, (int, np.integer))
            or isinstance(pad_to_multiple_of, bool)
            or pad_to_multiple_of < 1
        ):
            raise ValueError(
                f"pad_to_multiple_of must be a positive int, got {pad_to_multiple_of!r}"
            )
        found: Counter[str] = Counter()
        # chunks keep the temporaries small (cache-resident) for large batches
        pieces = [
            self._batch_ids(smiles[start : start + CHUNK], found)
            for start in range(0, len(smiles), CHUNK)
        ]
        self._record_unknown(found, strict, where="the batch")

        offset = 1 if add_special_tokens else 0
        counts = np.concatenate([c for _, c in pieces]) if pieces else np.zeros(0, np.int64)
        kept = counts if limit is None else np.minimum(counts, limit)
        lengths = kept + 2 * offset
        width = int(lengths.max()) if len(smiles) else 2 * offset
        if pad_to_multiple_of:
            width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
        input_ids = np.full((len(smiles), width), self.pad_id, dtype=np.int64)  # [B, N]
        first_row = 0
        for flat, piece_counts in pieces:
            rows = input_ids[first_row : first_row + piece_counts.size]
            scatter_rows(rows, flat, piece_counts, limit, offset)
            first_row += piece_counts.size
        if add_special_tokens:
            input_ids[:, 0] = self.bos_id
            input_ids[np.arange(len(smiles)), kept + 1] = self.eos_id
        return EncodedBatch(input_ids, lengths)

    def unknown_fraction(self, smiles_list: Sequence[str]) -> np.ndarray:
        """Share of each SMILES's tokens that encode as ``[UNK]``: float64 [B] in [0, 1].

        An empty string has share 0. ``unknown_token_counts`` is not updated.
        """
        smiles = as_smiles_list(smiles_list)
        share = np.zeros(len(smiles), dtype=np.float64)
        for start in range(0, len(smiles), CHUNK):
            flat, counts = self._batch_ids(smiles[start : start + CHUNK], Counter())
            owner = np.repeat(np.arange(counts.size), counts)  # [T] molecule of each token
            unknown = np.bincount(owner, weights=flat == self.unk_id, minlength=counts.size)
            share[start : start + counts.size] = unknown / np.maximum(counts, 1)
        return share

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Turn ids back into a SMILES string.

        With ``skip_special_tokens`` the framing tokens (BOS, EOS, PAD) are dropped.
        ``[UNK]`` and ``[MASK]`` are always written out: they stand for a position of
        the molecule, and dropping them would silently yield a different (possibly
        valid) SMILES.
        """
        checked = self._checked_ids(ids)
        table = self._id_to_token
        if skip_special_tokens:
            framing = (self.bos_id, self.eos_id, self.pad_id)
            return "".join([table[i] for i in checked if i not in framing])
        return "".join([table[i] for i in checked])

    def batch_decode(self, ids: Any, skip_special_tokens: bool = True) -> list[str]:
        """Decode every row of a 2-D id array (for example ``EncodedBatch.input_ids``)."""
        return [self.decode(row, skip_special_tokens) for row in ids]

    def reset_unknown_counts(self) -> None:
        """Forget the unknown tokens counted so far."""
        self.unknown_token_counts.clear()

    def _record_unknown(self, found: Counter[str], strict: bool, where: str) -> None:
        if not found:
            return
        if strict:
            listed = ", ".join(f"{tok!r} (x{n})" for tok, n in found.most_common())
            raise ValueError(f"unknown tokens in {where}: {listed}")
        self.unknown_token_counts.update(found)

    def _lookup(self, tokens: list[str]) -> tuple[list[int], list[str]]:
        """Ids of ``tokens`` (unknown -> ``unk_id``) and the unknown tokens, in order."""
        try:  # the common case, without a per-token Python step
            return list(map(self._encode_map.__getitem__, tokens)), []
        except KeyError:
            known = self._encode_map
            unk = self.unk_id
            return [known.get(tok, unk) for tok in tokens], [t for t in tokens if t not in known]

    def _batch_ids(self, smiles: list[str], found: Counter[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of all molecules, concatenated (int64 [T]), and per-molecule counts [B]."""
        fast = self._codes.batch_ids(smiles, found)
        if fast is not None:
            return fast
        # rare inputs (non-ASCII characters, embedded newlines): one SMILES at a time
        rows = []
        for text in smiles:
            ids, unknown = self._lookup(_TOKEN_RE.findall(text))
            found.update(unknown)
            rows.append(ids)
        counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        flat = np.array([i for row in rows for i in row], dtype=np.int64)
        return flat, counts

    def _checked_ids(self, ids: Iterable[int]) -> list[int]:
        values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if not isinstance(values, list):  # a 0-d array
            raise TypeError("expected a 1-D sequence of ids, got a scalar")
        if values:
            if not all(type(value) is int for value in values):
                bad = next(v for v in values if type(v) is not int)
                raise TypeError(f"ids must be integers, got {type(bad).__name__}: {bad!r}")
            low, high = min(values), max(values)
            if low < 0 or high >= self.vocab_size:
                value = low if low < 0 else high
                raise ValueError(
                    f"id {value} is out of range for a vocabulary of {self.vocab_size}"
                )
        return values

    def __len__(self) -> int:
        return self.vocab_size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SmilesTokenizer):
            return NotImplemented
        return self._id_to_token == other._id_to_token

    def __hash__(self) -> int:
        return hash(self._id_to_token)

    def __repr__(self) -> str:
        return f"SmilesTokenizer(vocab_size={self.vocab_size}, vocab_file={self.vocab_file!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {
            "tokens": list(self._id_to_token),
            "vocab_file": self.vocab_file,
            "unknown_token_counts": Counter(self.unknown_token_counts),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["tokens"], state["vocab_file"])
        self.unknown_token_counts = Counter(state["unknown_token_counts"])


def _check_str(smiles: object) -> None:
    if not isinstance(smiles, str):
        raise TypeError(f"SMILES must be a str, got {type(smiles).__name__}: {smiles!r}")


def _content_limit(max_length: int | None, add_special_tokens: bool) -> int | None:
    """Number of non-special tokens allowed by ``max_length`` (None: unlimited)."""
    if max_length is None:
        return None
    if not isinstance(max_length, (int, np.integer)) or isinstance(max_length, bool):
        raise TypeError(f"max_length must be an int or None, got {type(max_length).__name__}")
    needed = 2 if add_special_tokens else 1
    if max_length < needed:
        raise ValueError(
            f"max_length={max_length} is too small: at least {needed} "
            f"{'(BOS and EOS)' if add_special_tokens else 'id'} required"
        )
    return int(max_length) - (2 if add_special_tokens else 0)
