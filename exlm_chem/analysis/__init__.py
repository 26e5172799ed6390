"""The paper's analyses as tools: case-study figure, prediction entropy, Repeated MLM.

* :mod:`exlm_chem.analysis.explanation`: the transition matrix between the expanded states
  of a SMILES with ``[MASK]`` tokens, their top-k tokens, visit probabilities and the
  best path (paper, Figures 7, 10, 11).
* :mod:`exlm_chem.analysis.entropy`: entropy of the predictions at masked positions for
  ExLM and MLM checkpoints at several mask ratios (paper, appendices E and Q.1).
* :mod:`exlm_chem.analysis.repeated_mlm`: the prediction entropy of Repeated MLM's fully
  masked tokens (paper, appendix E.1); the transform and its statistics (section 3,
  appendix C) are :mod:`exlm_chem.data.repeated_mlm`, exported here too.

Attributes are imported lazily: importing this package imports neither torch nor
matplotlib.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem._lazy import lazy_attributes

# defining module -> its public names
_MODULES = {
    "exlm_chem.analysis.explanation": "Explanation StateInfo explain parse_masked_smiles",
    "exlm_chem.analysis.explanation_plot": "plot_explanation",
    "exlm_chem.analysis.entropy": (
        "EntropyRow TargetEntropies batch_entropies masked_entropy plot_entropy entropy_markdown"
    ),
    "exlm_chem.data.repeated_mlm": (
        "repeat_tokens mask_repeated repeated_mlm_collate corruption_stats"
    ),
    "exlm_chem.analysis.repeated_mlm": "fully_masked_entropy",
}
__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem.analysis", _MODULES, globals())

__all__ = ["LoadedModel", "load_model", *_LAZY]


class LoadedModel(NamedTuple):
    """A checkpoint ready for analysis."""

    model: Any  # ExLMModel, float32, eval mode
    config: Any  # ExLMConfig
    tokenizer: Any  # SmilesTokenizer built from the checkpoint's vocab.txt
    path: Path  # the checkpoint directory


def load_model(model: str | os.PathLike[str] = "default", device: str = "cpu") -> LoadedModel:
    """Load a checkpoint directory (or ``"default"``) with its own vocabulary.

    Parameters
    ----------
    model : str or PathLike
        Checkpoint directory, or ``"default"``: ``$EXLM_CHEM_MODEL``, then the shipped
        ``models/exlm-small``.
    device : str
        Torch device to load onto.

    Returns
    -------
    LoadedModel
    """
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.model.checkpoint import load_checkpoint
    from exlm_chem.model.pretrained import resolve_pretrained

    path = resolve_pretrained(model)
    net, config, _ = load_checkpoint(path, map_location=device)
    tokenizer = SmilesTokenizer.from_file(path / "vocab.txt")
    return LoadedModel(net, config, tokenizer, path)
