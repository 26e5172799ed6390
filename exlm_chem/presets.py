"""Every named setting of the package, as typed records in name -> record tables.

Three kinds of preset, one shape: a frozen dataclass per kind, a ``dict`` of named
records, and :func:`lookup`, which every reader goes through.

- :data:`MODEL_SIZES` (:class:`ModelSize`): the architecture of ``tiny``, ``small`` and
  ``base``, read by :meth:`exlm_chem.model.config.ExLMConfig.preset`.
- :data:`PRETRAIN_RECIPES` (:class:`PretrainRecipe`): ``--preset tiny|small|base|paper`` of
  ``exlm-chem pretrain``, a model size plus its schedule (:func:`resolve_schedule`).
- :data:`FINETUNE_PRESETS` (:class:`FinetuneSettings`): the paper's per-task fine-tuning
  settings (:func:`finetune_preset`), and :data:`REGRESSION_FINETUNE` for the regression
  sets the paper lacks.

**The paper's pre-training recipe** (appendix J, Table 7): the ``base`` model, Adam (0.9,
0.98), lr 5e-4 with 10K warm-up steps and linear ("polynomial", power 1) decay to 0 at 120K
steps, weight decay 0, clip 1.0, dropout 0.1, at most 64K tokens per batch. Learning rate,
betas, weight decay and clip are ``PretrainArgs``' defaults for every preset; dropout is
``ExLMConfig``'s.

**Tokens per step.** The paper trained with fairseq on two RTX 3090 GPUs and reports
"Max tokens 64K". fairseq's ``--max-tokens`` bounds the batch of *one* GPU (padded source
tokens), and the paper names no ``--update-freq``, so its optimizer steps saw up to 2 x 64K =
128K padded tokens. Here ``max_tokens`` counts the padded, unexpanded tokens of one optimizer
step over all ranks together; the ``paper`` recipe sets 65,536, i.e. the paper's per-GPU
batch, which one GPU holds. Pass ``--max-tokens 131072`` for the paper's global batch (120K
steps x 128K = up to 15.7B padded tokens, against 7.9B).

This module imports nothing but the standard library, so ``--help`` and config files stay
cheap to read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "FINETUNE_PRESETS", "MODEL_SIZES", "PRETRAIN_RECIPES", "REGRESSION_FINETUNE",
    "FinetuneSettings", "ModelSize", "PretrainRecipe", "finetune_preset", "finetune_presets",
    "fitted_warmup", "lookup", "model_preset", "resolve_schedule",
]

Record = TypeVar("Record")


def lookup(table: Mapping[str, Record], name: str, kind: str) -> Record:
    """The record called ``name`` in ``table``; a ``ValueError`` naming the choices if none."""
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"no {kind} preset {name!r}; choose from {sorted(table)}") from None


# ---- model sizes ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSize:
    """Architecture fields of an ``ExLMConfig``; every other field keeps the config's default."""

    n_layers: int  # pre-LN transformer blocks
    d_model: int  # width of the residual stream
    n_heads: int  # attention heads
    d_ffn: int  # hidden width of each feed-forward network
    k_states: int = 2  # expanded copies of every BOS, [MASK] and EOS
    max_expanded_positions: int = 1024  # transition head's position table (ExLMConfig's)


MODEL_SIZES: dict[str, ModelSize] = {
    # the paper's molecular model: 53.7M parameters here with its 369-token vocabulary,
    # transition head (3.2M) included; the paper reports ~50.5M
    "base": ModelSize(n_layers=9, d_model=768, n_heads=12, d_ffn=2048),
    # the shipped CPU-friendly default: head_dim 64 like the paper, and narrow enough that
    # the weights, heads and all, stay under the 20 MB shipping budget in 16-bit
    "small": ModelSize(n_layers=9, d_model=256, n_heads=4, d_ffn=1024),
    # unit tests; a shorter transition position table keeps it under 0.2M parameters
    "tiny": ModelSize(n_layers=2, d_model=64, n_heads=2, d_ffn=128, max_expanded_positions=512),
}


# ---- pre-training recipes ------------------------------------------------------------------
@dataclass(frozen=True)
class PretrainRecipe:
    """A model size and the schedule that goes with it.

    The schedule fills only the ``PretrainArgs`` fields a run leaves unset (``None``): a
    setting given explicitly (``--max-steps``) wins over the recipe's.
    """

    model: str  # a MODEL_SIZES name
    max_steps: int = 1000  # optimizer steps of the run
    warmup_steps: int = 100  # linear warm-up, then linear decay to end_lr
    max_tokens: int = 8192  # padded, unexpanded tokens per optimizer step, all ranks


#: the fields of :class:`PretrainRecipe` that are schedule settings of ``PretrainArgs``
SCHEDULE_FIELDS = ("max_steps", "warmup_steps", "max_tokens")

PRETRAIN_RECIPES: dict[str, PretrainRecipe] = {
    # a model size alone trains on the generic schedule
    **{name: PretrainRecipe(model=name) for name in MODEL_SIZES},
    "paper": PretrainRecipe(model="base", max_steps=120_000, warmup_steps=10_000,
                            max_tokens=65_536),
}


def model_preset(preset: str) -> str:
    """The :data:`MODEL_SIZES` name a pre-training preset builds (``"paper"``: ``"base"``)."""
    return lookup(PRETRAIN_RECIPES, preset, "pre-training").model


def fitted_warmup(warmup_steps: int, max_steps: int, cap: float = 0.1) -> int:
    """Warm-up cut to at most ``cap`` of the run (at least 1 step), so the decay happens.

    The paper warms up for 8% of its run; without the cut, ``--preset paper --max-steps
    3000`` would still be warming up at its last step.
    """
    return max(1, min(warmup_steps, math.floor(cap * max_steps)))


def resolve_schedule(args: Any) -> Any:
    """A copy of a ``PretrainArgs`` whose unset schedule fields hold its preset's values.

    A warm-up taken from the recipe is cut by :func:`fitted_warmup`; an explicit
    ``warmup_steps`` is kept as given.
    """
    recipe = lookup(PRETRAIN_RECIPES, args.preset, "pre-training")
    filled = {k: getattr(recipe, k) for k in SCHEDULE_FIELDS if getattr(args, k) is None}
    if "warmup_steps" in filled:
        max_steps = filled.get("max_steps", args.max_steps)
        filled["warmup_steps"] = fitted_warmup(filled["warmup_steps"], max_steps)
    return dataclasses.replace(args, **filled) if filled else args


# ---- fine-tuning settings ------------------------------------------------------------------
@dataclass(frozen=True)
class FinetuneSettings:
    """How one fine-tuning run trains.

    Adam (betas 0.9/0.99, eps 1e-6; decoupled weight decay) with a linear warm-up over
    ``warmup_ratio`` of all steps to ``lr``, then linear decay to 0 at the last step. The
    field names equal the estimator parameters, so
    ``ExLMMoleculeClassifier(**dataclasses.asdict(finetune_preset("bbbp")))`` works.
    """

    epochs: int = 30  # passes over the training molecules
    batch_size: int = 32  # molecules per optimiser step
    lr: float = 1e-4  # peak learning rate
    warmup_ratio: float = 0.06  # share of all steps spent warming up
    dropout: float = 0.1  # encoder dropout (replaces the checkpoint's value)
    pooler_dropout: float = 0.1  # dropout inside the classification head
    weight_decay: float = 0.0
    clip_norm: float = 1.0  # global gradient-norm clip; 0 disables it

    def __post_init__(self) -> None:
        problems = []
        for name, low in (("epochs", 0), ("batch_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                problems.append(f"{name} must be an integer >= {low}, got {value!r}")
        checks = {
            "lr": lambda v: v > 0,
            "warmup_ratio": lambda v: 0 <= v <= 1,
            "dropout": lambda v: 0 <= v < 1,
            "pooler_dropout": lambda v: 0 <= v < 1,
            "weight_decay": lambda v: v >= 0,
            "clip_norm": lambda v: v >= 0,
        }
        for name, ok in checks.items():
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or not ok(value):
                problems.append(f"{name} has an invalid value {value!r}")
        if problems:
            raise ValueError("invalid fine-tuning settings: " + "; ".join(problems))


#: The ExLM paper's appendix K, Table 8 (molecular fine-tuning), by lower-case task name:
#: epochs, batch size, lr, warm-up ratio, encoder dropout (0.1 for every task), head
#: (pooler) dropout. The optimiser constants it leaves out (betas, eps, weight decay 0, clip
#: 1.0) follow Uni-Mol's recipe: the class defaults.
FINETUNE_PRESETS: dict[str, FinetuneSettings] = {
    "bace": FinetuneSettings(60, 64, 1e-4, 0.06, 0.1, 0.2),
    "bbbp": FinetuneSettings(40, 128, 4e-4, 0.06, 0.1, 0.1),
    "tox21": FinetuneSettings(80, 128, 1e-4, 0.06, 0.1, 0.1),
    "sider": FinetuneSettings(100, 32, 5e-4, 0.4, 0.1, 0.0),
    "muv": FinetuneSettings(40, 128, 2e-5, 0.2, 0.1, 0.1),
    "clintox": FinetuneSettings(100, 256, 5e-5, 0.1, 0.1, 0.5),
    "toxcast": FinetuneSettings(80, 64, 1e-4, 0.06, 0.1, 0.1),
}

#: Fine-tuning of the regression sets, which Table 8 lacks: its BACE row (the middle of its
#: ranges) with a 0.1 head dropout. Our choice, not the paper's.
REGRESSION_FINETUNE = dataclasses.replace(FINETUNE_PRESETS["bace"], pooler_dropout=0.1)


def finetune_presets() -> dict[str, FinetuneSettings]:
    """All of Table 8, by lower-case task name (a copy: the table itself stays as shipped)."""
    return dict(FINETUNE_PRESETS)


def finetune_preset(name: str) -> FinetuneSettings:
    """The paper's fine-tuning settings for one task (``"bbbp"``, ``"tox21"``, ...).

    Examples
    --------
    >>> finetune_preset("BBBP").lr
    0.0004
    """
    return lookup(FINETUNE_PRESETS, name.lower(), "fine-tuning")
