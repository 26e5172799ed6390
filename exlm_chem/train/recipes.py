"""Training presets: a model size plus the schedule settings that go with it.

``--preset tiny|small|base`` picks a model size and the generic schedule below;
``--preset paper`` is the paper's molecular pre-training recipe (appendix J, Table 7):
the ``base`` model, Adam (0.9, 0.98), lr 5e-4 with 10K warm-up steps and linear
("polynomial", power 1) decay to 0 at 120K steps, weight decay 0, clip 1.0, dropout 0.1,
at most 64K tokens per batch.

**Tokens per step.** The paper trained with fairseq on two RTX 3090 GPUs and reports
"Max tokens 64K". fairseq's ``--max-tokens`` bounds the batch of *one* GPU (padded
source tokens), and the paper names no ``--update-freq``, so its optimizer steps saw up to
2 x 64K = 128K padded tokens. Here ``max_tokens`` counts the padded, unexpanded tokens of
one optimizer step over all ranks together; the ``paper`` preset sets 65,536, i.e. the
paper's per-GPU batch, which one GPU holds. Pass ``--max-tokens 131072`` for the paper's
global batch (120K steps x 128K = up to 15.7B padded tokens, against 7.9B).

Any setting given explicitly (``PretrainArgs(max_steps=...)`` or ``--max-steps``) wins
over the preset's. A preset's warm-up is cut to a tenth of a shorter run's steps (the paper
warms up for 8% of its run), so that ``--preset paper --max-steps 3000`` still decays; an
explicit ``warmup_steps`` is kept as given.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

#: schedule settings a preset fills in when the run leaves them unset (None)
GENERIC: dict[str, Any] = {"max_steps": 1000, "warmup_steps": 100, "max_tokens": 8192}

RECIPES: dict[str, dict[str, Any]] = {
    "paper": {"model": "base", "max_steps": 120_000, "warmup_steps": 10_000,
              "max_tokens": 65_536},
}

#: the rest of the paper's recipe, which are PretrainArgs' defaults for every preset
PAPER_FIXED: dict[str, Any] = {"lr": 5e-4, "end_lr": 0.0, "betas": (0.9, 0.98),
                               "weight_decay": 0.0, "clip_norm": 1.0}


def model_preset(preset: str) -> str:
    """The :class:`~exlm_chem.model.ExLMConfig` preset a training preset builds."""
    return RECIPES[preset]["model"] if preset in RECIPES else preset


def fitted_warmup(warmup_steps: int, max_steps: int, cap: float = 0.1) -> int:
    """Warm-up cut to at most ``cap`` of the run (at least 1 step), so the decay happens."""
    return max(1, min(warmup_steps, math.floor(cap * max_steps)))


def resolve_schedule(args: Any) -> Any:
    """A copy of a ``PretrainArgs`` whose unset schedule fields hold its preset's values."""
    values = {**GENERIC, **{k: v for k, v in RECIPES.get(args.preset, {}).items()
                            if k != "model"}}
    filled = {k: v for k, v in values.items() if getattr(args, k) is None}
    if "warmup_steps" in filled:
        max_steps = filled.get("max_steps", args.max_steps)
        filled["warmup_steps"] = fitted_warmup(filled["warmup_steps"], max_steps)
    return dataclasses.replace(args, **filled) if filled else args


__all__ = ["GENERIC", "PAPER_FIXED", "RECIPES", "fitted_warmup", "model_preset",
           "resolve_schedule"]
