"""ExLM model: config, 2D RoPE, encoder, heads and checkpoint I/O.

Attributes are imported lazily so that ``exlm_chem.model.config`` (torch-free) stays
cheap to reach through this package.
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

# public name -> module that defines it
_LAZY = {
    "ExLMConfig": "exlm_chem.model.config",
    "ExLMEncoder": "exlm_chem.model.encoder",
    "ExLMModel": "exlm_chem.model.encoder",
    "LMHead": "exlm_chem.model.heads",
    "TransitionHead": "exlm_chem.model.heads",
    "PredictionHead": "exlm_chem.model.heads",
    "save_checkpoint": "exlm_chem.model.checkpoint",
    "load_checkpoint": "exlm_chem.model.checkpoint",
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_attributes("exlm_chem.model", _LAZY, globals())
