"""ExLM model: config, 2D RoPE, encoder, heads and checkpoint I/O.

Attributes are imported lazily so that ``exlm_chem.model.config`` (torch-free) stays
cheap to reach through this package.
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

# defining module -> its public names
_MODULES = {
    "exlm_chem.model.config": "ExLMConfig",
    "exlm_chem.model.encoder": "ExLMEncoder ExLMModel",
    "exlm_chem.model.heads": "LMHead TransitionHead PredictionHead",
    "exlm_chem.model.checkpoint": "save_checkpoint load_checkpoint",
}
__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem.model", _MODULES, globals())
__all__ = list(_LAZY)
