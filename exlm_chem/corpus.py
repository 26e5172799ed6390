"""The pre-training corpus: reading, tokenising, hygiene and token-budget batches.

A corpus is one or more SMILES files (one per line, optionally gzipped). It is tokenised
once into a flat id array with offsets (compact: ~2M molecules fit in tens of MB), then
served as batches bounded by a token budget, bucketed by length so little is padding.
The batch order depends only on ``(seed, epoch)``, which is what makes resuming exact.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from exlm_chem.tokenizer import SmilesTokenizer

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

    def subset(self, index: np.ndarray) -> TokenizedCorpus:
        parts = [self.ids[self.offsets[i] : self.offsets[i + 1]] for i in index]
        lengths = np.array([len(p) for p in parts], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)
        return TokenizedCorpus(ids, offsets, [self.smiles[i] for i in index], 0)


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


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def token_budget_batches(
    lengths: np.ndarray, max_tokens: int, seed: int, epoch: int, bucket_size: int = 100
) -> list[np.ndarray]:
    """Indices grouped into batches of at most ``max_tokens`` padded tokens.

    Molecules are shuffled with ``(seed, epoch)``, sorted by length inside windows of
    ``bucket_size`` batches' worth (so a batch holds similar lengths), and the batches
    shuffled again. ``max_tokens`` counts padded, unexpanded tokens.
    """
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    window = max(1, bucket_size * max(1, max_tokens // max(1, int(np.median(lengths)))))
    batches: list[np.ndarray] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        current: list[int] = []
        longest = 0
        for i in chunk:
            longest_next = max(longest, int(lengths[i]))
            if current and longest_next * (len(current) + 1) > max_tokens:
                batches.append(np.array(current, dtype=np.int64))
                current, longest_next = [], int(lengths[i])
            current.append(int(i))
            longest = longest_next
        if current:
            batches.append(np.array(current, dtype=np.int64))
    return [batches[i] for i in rng.permutation(len(batches))]


class BatchStream:
    """Endless, resumable stream of index batches: epoch after epoch, same order each run."""

    def __init__(self, lengths: np.ndarray, max_tokens: int, seed: int) -> None:
        self.lengths, self.max_tokens, self.seed = lengths, max_tokens, seed

    def iterate(self, epoch: int = 0, position: int = 0) -> Iterator[tuple[int, int, np.ndarray]]:
        """Yield ``(epoch, position_in_epoch, indices)`` starting at a saved position."""
        while True:
            batches = token_budget_batches(self.lengths, self.max_tokens, self.seed, epoch)
            for pos in range(position, len(batches)):
                yield epoch, pos, batches[pos]
            epoch, position = epoch + 1, 0


def chunked(items: Iterable, size: int) -> Iterator[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
