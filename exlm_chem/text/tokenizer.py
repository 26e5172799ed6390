"""WordPiece tokenizer for the text path, with the SMILES tokenizer's interface.

A thin wrapper over a Hugging Face ``tokenizers`` WordPiece model (BERT normaliser and
pre-tokeniser). It can be trained on a user's corpus or loaded from a ``tokenizer.json``,
and it answers to the same calls the pre-training and fine-tuning code make of
:class:`~exlm_chem.data.tokenizer.SmilesTokenizer`: fixed special ids ``[CLS]`` = 0 (BOS),
``[PAD]`` = 1, ``[SEP]`` = 2 (EOS), ``[UNK]`` = 3, ``[MASK]`` = 4, ``tokens``,
``__len__``, ``encode(text, max_length=...)`` and ``unknown_token_counts``.

As with SMILES, special tokens never come from text: ``"[MASK]"`` written in a sentence
encodes as ``[UNK]`` (and is counted), so data cannot forge control tokens.

The ``tokenizers`` package is the optional extra ``text`` (``pip install
exlm_chem[text]``); it is imported only when a tokenizer is built.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.data.tokenizer import SPECIAL_TOKENS, SpecialTokenIds

__all__ = ["TOKENIZER_FILE", "TextTokenizer", "pair_lengths"]

#: File name of a saved tokenizer, inside a run or checkpoint directory.
TOKENIZER_FILE = "tokenizer.json"


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as err:  # the optional extra is missing
        raise ImportError("the text path needs the 'tokenizers' package: "
                          "pip install 'exlm_chem[text]'") from err
    return tokenizers


def pair_lengths(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """How many tokens of each segment survive "longest first" truncation to ``budget``.

    Tokens are removed one at a time from the longer segment (from ``b`` on a tie) until
    the pair fits, so a short segment is kept whole and two long ones end up equal
    (``a`` one longer when ``budget`` is odd).

    Examples
    --------
    >>> pair_lengths(10, 3, 8), pair_lengths(10, 10, 7), pair_lengths(2, 9, 6)
    ((5, 3), (4, 3), (2, 4))
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if len_a + len_b <= budget:
        return len_a, len_b
    keep_a = min(len_a, max((budget + 1) // 2, budget - len_b))
    return keep_a, budget - keep_a


class TextTokenizer(SpecialTokenIds):
    """WordPiece tokenizer with the fixed special ids of the ExLM models.

    Build one with :meth:`train` or :meth:`from_file`; save it with :meth:`save`.

    Attributes
    ----------
    tokens : list of str
        id -> token.
    bos_id, pad_id, eos_id, unk_id, mask_id : int
        Fixed special ids 0, 1, 2, 3, 4 (``[CLS]``, ``[PAD]``, ``[SEP]``, ``[UNK]``,
        ``[MASK]``).
    unknown_token_counts : collections.Counter
        Text pieces that became ``[UNK]`` in ``encode``/``encode_pair``/``encode_batch``,
        counted before truncation. Clear with ``reset_unknown_counts``.
    """

    def __init__(self, backend: Any, source: str = "<memory>") -> None:
        """Wrap a ``tokenizers.Tokenizer`` whose ids 0-4 are the five special tokens."""
        self.source = source
        backend.no_truncation()
        backend.no_padding()
        size = backend.get_vocab_size(with_added_tokens=True)
        tokens = [backend.id_to_token(i) for i in range(size)]
        holes = [i for i, t in enumerate(tokens) if t is None]
        if holes:
            raise ValueError(f"{source}: the vocabulary has no token for id(s) {holes[:10]}")
        wrong = [(i, tokens[i], want) for i, want in enumerate(SPECIAL_TOKENS)
                 if i >= size or tokens[i] != want]
        if wrong:
            shown = ", ".join(f"id {i} is {got!r}, not {want!r}" for i, got, want in wrong)
            raise ValueError(f"{source}: special tokens must hold ids 0-4 in the order "
                             f"{list(SPECIAL_TOKENS)}; {shown}")
        self._backend = backend
        self.tokens: list[str] = tokens
        self.vocab_size = size
        self.unknown_token_counts: Counter[str] = Counter()

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int = 30000,
        min_frequency: int = 2,
        lowercase: bool = True,
        length: int | None = None,
    ) -> TextTokenizer:
        """Learn a WordPiece vocabulary (BERT normalisation and pre-tokenisation).

        Parameters
        ----------
        texts : iterable of str
            The training text, e.g. the lines of the pre-training corpus.
        vocab_size : int
            Target size, the five special tokens included; a small corpus may give fewer.
        min_frequency : int
            Pieces seen fewer times are not merged into the vocabulary.
        lowercase : bool
            Lower-case and strip accents first (BERT "uncased").
        length : int, optional
            Number of texts, only for the progress estimate of the trainer.
        """
        if vocab_size <= len(SPECIAL_TOKENS):
            raise ValueError(f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special "
                             f"tokens, got {vocab_size}")
        tk = _tokenizers()
        backend = tk.Tokenizer(tk.models.WordPiece(unk_token=SPECIAL_TOKENS[3]))
        backend.normalizer = tk.normalizers.BertNormalizer(lowercase=lowercase)
        backend.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
        backend.decoder = tk.decoders.WordPiece()
        # the trainer gives the special tokens the first ids, in this order
        trainer = tk.trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS), show_progress=False)
        backend.train_from_iterator(texts, trainer, length=length)
        return cls(backend, source=f"trained (vocab_size={vocab_size})")

    @classmethod
    def from_file(cls, path: str | Path) -> TextTokenizer:
        """Load a ``tokenizer.json``, or the one inside a directory."""
        path = Path(path)
        if path.is_dir():
            path = path / TOKENIZER_FILE
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer file at {path}")
        backend = _tokenizers().Tokenizer.from_file(str(path))
        return cls(backend, source=str(path))

    def save(self, path: str | Path) -> Path:
        """Write ``tokenizer.json`` (to ``path``, or inside it when it is a directory).

        The file is written to a temporary name and renamed, so a reader never sees
        half of it.
        """
        from exlm_chem.files.safe_write import write_text_atomic

        target = Path(path)
        if target.is_dir():
            target = target / TOKENIZER_FILE
        return write_text_atomic(target, self.to_str())

    def to_str(self) -> str:
        """The ``tokenizer.json`` text."""
        return self._backend.to_str(pretty=True)

    def __len__(self) -> int:
        return self.vocab_size

    def _ids(self, encoding: Any, text: str) -> list[int]:
        """Ids of one backend encoding, specials-from-text turned to [UNK] and counted."""
        ids = encoding.ids
        if any(i in self.special_ids for i in ids):
            for j, i in enumerate(ids):
                if i in self.special_ids:
                    start, end = encoding.offsets[j]
                    self.unknown_token_counts[text[start:end] or encoding.tokens[j]] += 1
                    ids[j] = self.unk_id
        return ids

    def tokenize(self, text: str) -> list[str]:
        """Word pieces of ``text`` (no special tokens added)."""
        _check_str(text)
        return self._backend.encode(text, add_special_tokens=False).tokens

    def encode(
        self, text: str, add_special_tokens: bool = True, max_length: int | None = None
    ) -> list[int]:
        """Ids of one text, ``[CLS] ... [SEP]`` by default.

        With special tokens, truncation to ``max_length`` keeps the final ``[SEP]``
        (pieces before it are dropped), so ``max_length`` must then be >= 2.
        """
        _check_str(text)
        ids = self._ids(self._backend.encode(text, add_special_tokens=False), text)
        if not add_special_tokens:
            return ids if max_length is None else ids[:max_length]
        if max_length is not None:
            if max_length < 2:
                raise ValueError(f"max_length must be >= 2 with special tokens, got {max_length}")
            del ids[max_length - 2 :]
        return [self.bos_id, *ids, self.eos_id]

    def encode_pair(self, text_a: str, text_b: str, max_length: int | None = None) -> list[int]:
        """``[CLS] a [SEP] b [SEP]``, truncated "longest first" to ``max_length``.

        The three special tokens are always kept, so ``max_length`` must be >= 3.
        """
        _check_str(text_a)
        _check_str(text_b)
        a = self._ids(self._backend.encode(text_a, add_special_tokens=False), text_a)
        b = self._ids(self._backend.encode(text_b, add_special_tokens=False), text_b)
        return self._join_pair(a, b, max_length)

    def _join_pair(self, a: list[int], b: list[int], max_length: int | None) -> list[int]:
        if max_length is not None:
            if max_length < 3:
                raise ValueError(f"max_length must be >= 3 for a pair, got {max_length}")
            keep_a, keep_b = pair_lengths(len(a), len(b), max_length - 3)
            a, b = a[:keep_a], b[:keep_b]
        return [self.bos_id, *a, self.eos_id, *b, self.eos_id]

    def encode_batch(
        self,
        texts: Sequence[str],
        texts_b: Sequence[str] | None = None,
        max_length: int | None = None,
    ) -> list[np.ndarray]:
        """Framed ids of many texts or pairs at once (the backend runs them in parallel).

        Returns one int64 array per input: ``[CLS] a [SEP]`` or ``[CLS] a [SEP] b [SEP]``,
        truncated as :meth:`encode` / :meth:`encode_pair` would.
        """
        for text in texts:
            _check_str(text)
        if texts_b is not None:
            if len(texts_b) != len(texts):
                raise ValueError(f"{len(texts)} first and {len(texts_b)} second segments")
            for text in texts_b:
                _check_str(text)
        first = self.encode_pieces(texts)
        if texts_b is None:
            limit = None if max_length is None else max_length - 2
            if limit is not None and limit < 0:
                raise ValueError(f"max_length must be >= 2 with special tokens, got {max_length}")
            return [np.array([self.bos_id, *a[:limit], self.eos_id], dtype=np.int64)
                    for a in first]
        second = self.encode_pieces(texts_b)
        return [np.array(self._join_pair(a, b, max_length), dtype=np.int64)
                for a, b in zip(first, second, strict=True)]

    def encode_pieces(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of many texts without special tokens (no truncation)."""
        encodings = self._backend.encode_batch(list(texts), add_special_tokens=False)
        return [self._ids(e, t) for e, t in zip(encodings, texts, strict=True)]

    def iter_pieces(self, texts: Iterable[str], chunk: int = 4096) -> Iterator[list[int]]:
        """:meth:`encode_pieces` over an iterable, ``chunk`` texts at a time."""
        remaining = iter(texts)
        while batch := list(itertools.islice(remaining, chunk)):
            yield from self.encode_pieces(batch)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ids (word pieces joined back; lower-cased if the tokenizer is)."""
        return self._backend.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def reset_unknown_counts(self) -> None:
        """Forget the unknown pieces counted so far."""
        self.unknown_token_counts.clear()

    def __repr__(self) -> str:
        return f"TextTokenizer(vocab_size={self.vocab_size}, source={self.source!r})"


def _check_str(text: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"expected a str, got {type(text).__name__}: {text!r:.80}")
