"""Pre-training ExLM (or its MLM twin) on plain text.

The molecular :class:`~exlm_chem.train.pretrain.Pretrainer` does the work: masking, states
expansion, the DAG or cross-entropy loss, token-budget batches, the learning-rate
schedule, validation, DDP and exact resume. Only the data and the tokenizer differ:

* the corpus is plain text (one or more files, ``.gz`` allowed; every non-blank line is
  a piece of running text). All lines are tokenised and concatenated into one stream
  (RoBERTa's "full sentences" packing, without separators: an inner ``[SEP]`` would be
  expanded like an EOS), which is cut into chunks of ``max_length - 2`` word pieces;
  each chunk becomes one sample ``[CLS] chunk [SEP]``, so every sample still ends in
  the EOS the DAG's end node needs;
* the tokenizer is a :class:`~exlm_chem.text.tokenizer.TextTokenizer`, trained on the
  corpus or loaded from a ``tokenizer.json``; it is saved as ``OUT/tokenizer.json`` and
  inside every checkpoint next to ``vocab.txt``;
* there is no benchmark-hygiene step (that is about molecules).

``k_states`` defaults to 4, the paper's text setting.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.corpus import (
    TokenizedCorpus,
    open_text,
    split_validation,
)
from exlm_chem.files.checksums import file_sha256
from exlm_chem.text.pretrain_args import TextPretrainArgs
from exlm_chem.text.tokenizer import TOKENIZER_FILE, TextTokenizer
from exlm_chem.train.pretrain import Pretrainer, setup_distributed

__all__ = ["TextPretrainer", "pack_documents", "read_text_lines", "resolve_tokenizer",
           "text_pretrain"]

logger = logging.getLogger(__name__)


def read_text_lines(path: str | Path, limit: int | None = None) -> Iterator[str]:
    """Non-blank lines of a text file (``.gz`` allowed), without their line ends."""
    n = 0
    with open_text(path) as handle:
        for line in handle:
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            yield line
            n += 1
            if limit is not None and n >= limit:
                return


def _corpus_lines(args: TextPretrainArgs) -> Iterator[str]:
    return (line for path in args.corpus for line in read_text_lines(path, args.corpus_limit))


def pack_documents(pieces: Iterable[Sequence[int]], max_length: int, bos: int, eos: int
                   ) -> TokenizedCorpus:
    """Concatenate token streams and cut them into ``[bos] chunk [eos]`` samples.

    Every chunk holds ``max_length - 2`` tokens except the last, which holds the rest.

    Examples
    --------
    >>> packed = pack_documents([[5, 6, 7], [8, 9]], max_length=4, bos=0, eos=2)
    >>> [packed.get(i).tolist() for i in range(len(packed))]
    [[0, 5, 6, 2], [0, 7, 8, 2], [0, 9, 2]]
    """
    if max_length < 3:
        raise ValueError(f"max_length must be >= 3, got {max_length}")
    parts = [np.asarray(p, dtype=np.int32) for p in pieces if len(p)]
    body = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)  # [total]
    if body.size == 0:
        raise ValueError("the corpus holds no tokens")
    width = max_length - 2
    n = -(-body.size // width)  # ceil
    sizes = np.full(n, width, dtype=np.int64)
    sizes[-1] = body.size - width * (n - 1)
    offsets = np.concatenate(([0], np.cumsum(sizes + 2)))  # [n + 1]
    ids = np.empty(int(offsets[-1]), dtype=np.int32)  # int32: text vocabularies pass 32767
    inner = np.ones(ids.size, dtype=bool)
    inner[offsets[:-1]] = False
    inner[offsets[1:] - 1] = False
    ids[offsets[:-1]] = bos
    ids[offsets[1:] - 1] = eos
    ids[inner] = body
    return TokenizedCorpus(ids, offsets, 0)


class TextPretrainer(Pretrainer):
    """:class:`~exlm_chem.train.pretrain.Pretrainer` on a packed text corpus."""

    def load_data(self) -> None:
        args = self.args
        self.corpus_checksums = {str(p): file_sha256(p) for p in args.corpus}
        self.hygiene_summary = {"enabled": False, "reason": "text corpus"}
        self.tokenizer.reset_unknown_counts()
        pieces = self.tokenizer.iter_pieces(_corpus_lines(args))
        corpus = pack_documents(pieces, args.max_length, self.tokenizer.bos_id,
                                self.tokenizer.eos_id)
        self.n_unknown_tokens = sum(self.tokenizer.unknown_token_counts.values())
        if self.n_unknown_tokens:
            logger.warning("%d corpus pieces became [UNK] (most common: %s)",
                           self.n_unknown_tokens,
                           self.tokenizer.unknown_token_counts.most_common(5))
        n_valid = min(args.valid_size, max(1, len(corpus) // 10))
        if len(corpus) < 2:
            raise ValueError(f"the corpus packs into {len(corpus)} sample(s) of "
                             f"{args.max_length} tokens; need at least 2 (train + valid)")
        train_idx, valid_idx = split_validation(len(corpus), n_valid, args.seed)
        self.train = corpus.subset(train_idx)
        self.valid = corpus.subset(valid_idx)
        self.stream = BatchStream(self.train.lengths(), args.max_tokens, args.seed)
        if self.rank == 0:
            logger.info("text corpus: %d tokens in %d train / %d valid samples of <= %d",
                        int(corpus.lengths().sum()), len(self.train), len(self.valid),
                        args.max_length)

    def checkpoint_files(self, directory: Path) -> None:
        """Add tokenizer.json: the vocabulary alone does not say how text is split."""
        self.tokenizer.save(Path(directory) / TOKENIZER_FILE)


def resolve_tokenizer(args: TextPretrainArgs, resume: bool = False) -> TextTokenizer:
    """The run's tokenizer, written to ``OUT/tokenizer.json`` on first use.

    A resumed run reuses ``OUT/tokenizer.json``; a ``tokenizer`` argument must then hold
    the same vocabulary.
    """
    out = Path(args.out)
    saved = out / TOKENIZER_FILE
    rank = int(torch.distributed.get_rank()) if torch.distributed.is_initialized() else 0
    if resume and saved.is_file():
        tokenizer = TextTokenizer.from_file(saved)
        if args.tokenizer is not None and TextTokenizer.from_file(args.tokenizer).tokens != \
                tokenizer.tokens:
            raise ValueError(f"{args.tokenizer} differs from {saved}, the tokenizer the run "
                             "started with; resume without --tokenizer or start a new run")
        return tokenizer
    if rank == 0:
        if args.tokenizer is not None:
            tokenizer = TextTokenizer.from_file(args.tokenizer)
        else:
            tokenizer = TextTokenizer.train(_corpus_lines(args), vocab_size=args.vocab_size,
                                            min_frequency=args.min_frequency,
                                            lowercase=args.lowercase)
            logger.info("trained a WordPiece vocabulary of %d tokens", len(tokenizer))
        tokenizer.save(saved)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()  # the other ranks read what rank 0 wrote
    return TextTokenizer.from_file(saved)


def text_pretrain(args: TextPretrainArgs, resume: bool = False) -> dict:
    """Run (or resume) text pre-training; returns the final progress record."""
    setup_distributed()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    tokenizer = resolve_tokenizer(args, resume)
    result = TextPretrainer(args, tokenizer).run(resume=resume)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    return result
