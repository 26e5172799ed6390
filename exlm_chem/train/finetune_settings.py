"""Fine-tuning hyper-parameters: one dataclass and the paper's per-task presets.

The presets are the ExLM paper's Table 8 (appendix K), shipped in the package as
``exlm_chem/data/finetune_settings.json``. The field names equal the estimator parameters,
so ``ExLMMoleculeClassifier(**dataclasses.asdict(finetune_preset("bbbp")))`` works.
This module imports no torch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path

__all__ = ["PRESETS_FILE", "FinetuneSettings", "finetune_preset", "finetune_presets"]

#: Where the paper's Table 8 lives: package data, so an installed wheel has it too.
PRESETS_FILE = Path(__file__).resolve().parents[1] / "data" / "finetune_settings.json"


@dataclass(frozen=True)
class FinetuneSettings:
    """How one fine-tuning run trains.

    Adam (betas 0.9/0.99, eps 1e-6; decoupled weight decay) with a linear warm-up over
    ``warmup_ratio`` of all steps to ``lr``, then linear decay to 0 at the last step.
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


def finetune_presets(path: str | Path | None = None) -> dict[str, FinetuneSettings]:
    """All named presets (lower-case task names) from the settings JSON file."""
    path = Path(path) if path is not None else PRESETS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"fine-tuning presets not found at {path}; they ship in the "
                                "package as exlm_chem/data/finetune_settings.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    known = {f.name for f in fields(FinetuneSettings)}
    presets = {}
    for name, values in data.items():
        if name.startswith("_"):  # notes such as "_source"
            continue
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{path}: preset {name!r} has unknown field(s) {unknown}")
        presets[name.lower()] = FinetuneSettings(**values)
    return presets


def finetune_preset(name: str, path: str | Path | None = None) -> FinetuneSettings:
    """The paper's fine-tuning settings for one task (``"bbbp"``, ``"tox21"``, ...).

    Examples
    --------
    >>> finetune_preset("BBBP").lr
    0.0004
    """
    presets = finetune_presets(path)
    try:
        return presets[name.lower()]
    except KeyError:
        raise ValueError(f"no fine-tuning preset {name!r}; choose from "
                         f"{sorted(presets)}") from None
