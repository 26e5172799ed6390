"""The secondary text path: ExLM on English text and the GLUE benchmark.

The same encoder, objectives and pre-training loop as the molecular path, with a
WordPiece tokenizer (:class:`TextTokenizer`), packed text corpora
(:func:`text_pretrain`) and sentence(-pair) fine-tuning on the eight GLUE tasks read
from the standard TSV files (:func:`read_glue_split`, :func:`run_glue`).

Attributes are imported lazily: ``import exlm_chem.text`` needs neither torch nor the
``tokenizers`` package.
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

# public name -> module that defines it
_LAZY = {
    "TextTokenizer": "exlm_chem.text.tokenizer",
    "TOKENIZER_FILE": "exlm_chem.text.tokenizer",
    "TextPretrainArgs": "exlm_chem.text.pretrain",
    "TextPretrainer": "exlm_chem.text.pretrain",
    "pack_documents": "exlm_chem.text.pretrain",
    "text_pretrain": "exlm_chem.text.pretrain",
    "GLUE_TASKS": "exlm_chem.text.glue",
    "GlueTask": "exlm_chem.text.glue",
    "GlueSplit": "exlm_chem.text.glue",
    "GlueFormatError": "exlm_chem.text.glue",
    "BadRow": "exlm_chem.text.glue",
    "get_task": "exlm_chem.text.glue",
    "read_glue_split": "exlm_chem.text.glue",
    "read_glue_tsv": "exlm_chem.text.glue",
    "glue_metrics": "exlm_chem.text.glue",
    "GlueReport": "exlm_chem.text.finetune",
    "GlueSeedResult": "exlm_chem.text.finetune",
    "finetune_glue": "exlm_chem.text.finetune",
    "run_glue": "exlm_chem.text.finetune",
    "format_glue_report": "exlm_chem.text.finetune",
    "glue_settings": "exlm_chem.text.finetune",
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes("exlm_chem.text", _LAZY, globals())
