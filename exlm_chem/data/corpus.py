"""The pre-training corpus: reading and tokenising.

A corpus is one or more SMILES files (one per line, optionally gzipped). It is tokenised
once into a flat id array with offsets (compact: ~2M molecules fit in tens of MB), which
:class:`exlm_chem.data.batching.BatchStream` serves as token-budget batches.
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


class TokenizedCorpus(NamedTuple):
    ids: np.ndarray  # [total tokens] int16, every molecule's [BOS ... EOS] back to back
    offsets: np.ndarray  # [n + 1] int64, molecule i is ids[offsets[i]:offsets[i+1]]
    smiles: list[str]  # the source strings, aligned with the molecules
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
        """Molecules ``index`` in that order; SMILES kept when the corpus has them."""
        ids, lengths = self.tokens(index)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        smiles = [self.smiles[i] for i in index] if self.smiles else []
        return TokenizedCorpus(ids, offsets, smiles, 0)


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
    """Tokenise every SMILES to ``[BOS ... EOS]`` (truncated to ``max_length``, EOS kept)."""
    before = sum(tokenizer.unknown_token_counts.values())
    encoded = [tokenizer.encode(s, max_length=max_length) for s in smiles]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    flat = np.fromiter((t for e in encoded for t in e), dtype=np.int16, count=int(offsets[-1]))
    n_unknown = sum(tokenizer.unknown_token_counts.values()) - before
    if n_unknown:
        logger.warning("%d corpus tokens are not in the vocabulary and became [UNK]", n_unknown)
    return TokenizedCorpus(flat, offsets, list(smiles), n_unknown)


def split_validation(n: int, n_valid: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Hold out ``n_valid`` molecules at random (seeded); returns (train, valid) indices."""
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])
