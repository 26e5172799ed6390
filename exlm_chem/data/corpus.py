"""The pre-training corpus: reading and tokenising.

A corpus is one or more SMILES files (one per line, optionally gzipped). Pre-training reads
them only through :mod:`exlm_chem.data.corpus_prepare` (canonical SMILES, deduplicated,
benchmark hygiene), which tokenises them once into a flat id array with offsets (compact:
~2M molecules fit in tens of MB); :class:`exlm_chem.data.batching.BatchStream` serves it as
token-budget batches.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from exlm_chem.data.tokenizer import SmilesTokenizer

logger = logging.getLogger(__name__)

_ENCODE_CHUNK = 50_000  # molecules per batch_encode call: keeps the padded matrix small


class TokenizedCorpus(NamedTuple):
    # [total tokens] uint8 (uint16 beyond 256 tokens; text: int32), every molecule's
    # [BOS ... EOS] back to back
    ids: np.ndarray
    offsets: np.ndarray  # [n + 1] int64, molecule i is ids[offsets[i]:offsets[i+1]]
    n_unknown_tokens: int  # tokens that mapped to [UNK]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def get(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]].astype(np.int64)

    def tokens(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ids of molecules ``index`` back to back [tokens], and their lengths [len(index)]."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths()[index]
        starts = np.cumsum(lengths) - lengths
        # source position of every output token: its molecule's start plus its rank in it
        shift = np.repeat(self.offsets[index] - starts, lengths)  # [tokens]
        return self.ids[np.arange(int(lengths.sum())) + shift], lengths

    def subset(self, index: np.ndarray) -> TokenizedCorpus:
        """Molecules ``index`` in that order."""
        ids, lengths = self.tokens(index)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        return TokenizedCorpus(ids, offsets, 0)


def open_text(path: str | Path):
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_smiles_file(path: str | Path, limit: int | None = None) -> list[str]:
    """Read one SMILES per line (first whitespace-separated field); blank lines skipped."""
    out: list[str] = []
    with open_text(path) as handle:
        for line in handle:
            field = line.split(maxsplit=1)
            if field:
                out.append(field[0])
                if limit is not None and len(out) >= limit:
                    break
    return out


def tokenize_corpus(
    smiles: Sequence[str], tokenizer: SmilesTokenizer, max_length: int = 256
) -> TokenizedCorpus:
    """Tokenise every SMILES to ``[BOS ... EOS]`` (truncated to ``max_length``, EOS kept).

    Vectorised in chunks of :data:`_ENCODE_CHUNK` molecules (``batch_encode``), which keeps
    the padded id matrix small; the ids are uint8 while the vocabulary fits (uint16 else).
    """
    dtype = np.uint8 if len(tokenizer) <= 256 else np.uint16
    before = sum(tokenizer.unknown_token_counts.values())  # the caller's count stays intact
    ids_parts, length_parts = [], []
    for start in range(0, len(smiles), _ENCODE_CHUNK):
        batch = tokenizer.batch_encode(list(smiles[start : start + _ENCODE_CHUNK]), max_length)
        real = np.arange(batch.input_ids.shape[1])[None, :] < batch.lengths[:, None]  # [B, N]
        ids_parts.append(batch.input_ids[real].astype(dtype))  # row-major: molecule order
        length_parts.append(batch.lengths)
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, np.int64)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_unknown = sum(tokenizer.unknown_token_counts.values()) - before
    if n_unknown:
        logger.warning("%d corpus tokens are not in the vocabulary and became [UNK]", n_unknown)
    return TokenizedCorpus(ids, offsets, n_unknown)


def decode_corpus(corpus: TokenizedCorpus, tokenizer: SmilesTokenizer,
                  max_length: int) -> list[str | None]:
    """The SMILES each molecule of ``corpus`` was tokenised from: the inverse of
    :func:`tokenize_corpus`, vectorised.

    Tokenisation keeps every character (``"".join(tokens) == smiles``), so the tokens
    between BOS and EOS joined give the SMILES back exactly. Some molecules cannot be
    read back faithfully; they are None:

    * truncated ones: ``max_length`` tokens or more (a molecule of exactly ``max_length``
      tokens may or may not have been cut; it counts as cut);
    * those holding ``[UNK]`` (an out-of-vocabulary token) or any special token other
      than the framing BOS first and EOS last.

    Parameters
    ----------
    corpus : TokenizedCorpus
        Molecules as ``[BOS ... EOS]`` ids (:func:`tokenize_corpus`).
    tokenizer : SmilesTokenizer
        The tokenizer (vocabulary) that made the ids.
    max_length : int
        The ``max_length`` they were tokenised with.

    Returns
    -------
    list of (str or None)
        One entry per molecule, in corpus order.
    """
    ids = np.asarray(corpus.ids)  # uint8 / uint16 index as they are: no int64 copy
    if ids.size == 0:
        return [None] * len(corpus)  # every molecule empty: none framed
    if ids.min() < 0 or ids.max() >= len(tokenizer):
        raise ValueError(f"token ids range over {ids.min()}..{ids.max()}, beyond the "
                         f"vocabulary of {len(tokenizer)}")
    special = np.zeros(len(tokenizer), dtype=bool)
    special[sorted(tokenizer.special_ids)] = True
    table = np.array(tokenizer.tokens, dtype=object)  # id -> token text
    table[special] = ""  # framing writes nothing (the others make a row undecodable)
    widths = np.fromiter(map(len, table), dtype=np.int64, count=table.size)  # characters
    starts, ends = corpus.offsets[:-1], corpus.offsets[1:]
    lengths = ends - starts
    specials_before = np.concatenate(([0], np.cumsum(special[ids])))  # [T + 1]
    chars_before = np.concatenate(([0], np.cumsum(widths[ids])))  # [T + 1] text positions
    first = ids[np.minimum(starts, ids.size - 1)]  # meaningful where lengths >= 2
    last = ids[np.maximum(ends - 1, 0)]
    ok = ((lengths >= 2) & (lengths < max_length) & (first == tokenizer.bos_id)
          & (last == tokenizer.eos_id) & (specials_before[ends] - specials_before[starts] == 2))
    out: list[str | None] = []
    for lo in range(0, len(corpus), _ENCODE_CHUNK):  # bounds the list of token strings
        hi = min(lo + _ENCODE_CHUNK, len(corpus))
        first_token, end_token = int(starts[lo]), int(ends[hi - 1])
        text = "".join(table[ids[first_token:end_token]].tolist())
        base = chars_before[first_token]
        begin = (chars_before[starts[lo:hi]] - base).tolist()
        stop = (chars_before[ends[lo:hi]] - base).tolist()
        out.extend(text[b:e] if keep else None
                   for b, e, keep in zip(begin, stop, ok[lo:hi].tolist(), strict=True))
    return out


def split_validation(n: int, n_valid: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Hold out ``n_valid`` molecules at random (seeded); returns (train, valid) indices."""
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])
