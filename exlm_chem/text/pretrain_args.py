"""The options of text pre-training, in a module that imports no torch.

``exlm-chem text pretrain --help`` builds its options from these fields, so declaring them
must stay cheap (``tests/cli/test_cli_startup.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from exlm_chem.train.pretrain_args import PretrainArgs

__all__ = ["TextPretrainArgs"]


@dataclass
class TextPretrainArgs(PretrainArgs):
    """:class:`~exlm_chem.train.pretrain_args.PretrainArgs` with text defaults and tokenizer
    options.

    ``corpus`` holds text files; ``max_length`` is the packed sample length (word pieces
    with ``[CLS]`` and ``[SEP]``); ``corpus_limit`` reads only the first N lines of each
    file. ``hygiene`` and ``masking="fragment"`` do not apply to text.
    """

    k_states: int | None = 4  # the paper's text setting (Table 10)
    max_length: int = 128
    hygiene: bool = False
    tokenizer: str | None = None  # tokenizer.json (or a directory holding one) to load
    train_tokenizer: bool = False  # learn a WordPiece vocabulary on the corpus instead
    vocab_size: int = 30000  # of the trained tokenizer, special tokens included
    min_frequency: int = 2  # pieces rarer than this are not learnt
    lowercase: bool = True  # of the trained tokenizer (BERT "uncased")

    def __post_init__(self) -> None:
        problems = []
        if self.hygiene:
            problems.append("hygiene (benchmark-molecule removal) does not apply to text")
        if self.masking != "token":
            problems.append(f"masking={self.masking!r}: text supports only 'token'")
        if self.contrast_weight:
            problems.append("contrast_weight (randomised SMILES views) does not apply to text")
        if self.translate_weight:
            problems.append("translate_weight (randomised SMILES views) does not apply to text")
        if (self.tokenizer is None) == (not self.train_tokenizer):
            problems.append("give exactly one of tokenizer=PATH or train_tokenizer=True")
        if self.max_length < 3:
            problems.append(f"max_length must be >= 3, got {self.max_length}")
        if problems:
            raise ValueError("invalid text pre-training arguments: " + "; ".join(problems))
