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

# defining module -> its public names
_MODULES = {
    "exlm_chem.text.tokenizer": "TextTokenizer TOKENIZER_FILE",
    "exlm_chem.text.pretrain_args": "TextPretrainArgs",
    "exlm_chem.text.pretrain": "TextPretrainer pack_documents text_pretrain",
    "exlm_chem.text.glue": (
        "GLUE_TASKS GlueTask GlueSplit GlueFormatError BadRow get_task read_glue_split "
        "read_glue_tsv glue_metrics"
    ),
    "exlm_chem.text.finetune": (
        "GlueReport GlueSeedResult finetune_glue run_glue format_glue_report glue_settings"
    ),
}
__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem.text", _MODULES, globals())
__all__ = list(_LAZY)
