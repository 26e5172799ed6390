"""Which existing directories a save may replace: only what exlm_chem wrote itself.

A directory counts as a saved model when its ``metadata.json`` is a JSON object whose
``format`` is one of ours; it may be replaced only when it holds nothing but the files a
save writes (:data:`MODEL_FILES`) and, when a kind is asked for, is of that kind: a
fitted estimator is never saved over a pre-trained checkpoint, nor the reverse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Files an exlm_chem save (checkpoint, fitted estimator, pre-training run checkpoint,
#: shipped model card) may write into a model directory.
MODEL_FILES = frozenset({
    "config.json", "model.safetensors", "vocab.txt", "metadata.json",
    "training_state.json", "training_state.safetensors", "tokenizer.json", "MODEL_CARD.md",
})  # fmt: skip

#: Kind tags of ``metadata.json`` "format"; the "-1" is part of the name, not a version
#: (see :mod:`exlm_chem.model.checkpoint_format` for the format version).
CHECKPOINT_FORMAT = "exlm_chem-checkpoint-1"
ESTIMATOR_FORMAT = "exlm_chem-estimator-1"
_FORMAT_PREFIX = "exlm_chem-"
_SHOWN = 5


def saved_metadata(path: Path) -> dict[str, Any] | None:
    """``metadata.json`` of a directory saved by exlm_chem, or None if it is not one."""
    try:
        meta = json.loads((path / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not str(meta.get("format", "")).startswith(_FORMAT_PREFIX):
        return None
    return meta


def describe(meta: dict[str, Any] | None) -> str:
    """What a saved directory holds, in words."""
    if meta is None:
        return "no saved exlm_chem model"
    if "estimator" in meta or meta.get("format") == ESTIMATOR_FORMAT:
        name = meta.get("estimator") or "estimator"
        return f"a fitted {name} (saved by `exlm-chem fit` or .save)"
    return "a pre-trained checkpoint"


def _listing(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def replace_refusal(path: Path, kind: str | None) -> str | None:
    """Why saving a model of format ``kind`` at ``path`` must not replace it; None if it may.

    ``kind`` None accepts a saved model of any exlm_chem format.
    """
    if path.is_symlink() and not path.exists():
        return f"{path} is a broken symbolic link; remove it or give another path"
    if not path.exists():
        return None
    if not path.is_dir():
        return f"{path} exists and is not a directory; not replacing it"
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return None
    meta = saved_metadata(path)
    if meta is None:
        return (f"{path} already exists and is not a model saved by exlm_chem (it holds "
                f"{_listing(entries)}); saving there would delete those files. Give a new "
                "directory, or empty this one yourself")
    if kind is not None and meta.get("format") != kind:
        return (f"{path} holds {describe(meta)}; not replacing it with a model of another "
                "kind. Give a new directory")
    foreign = [n for n in entries if n not in MODEL_FILES or not (path / n).is_file()]
    if foreign:
        return (f"{path} holds a saved model and also files exlm_chem did not write "
                f"({_listing(foreign)}); saving there would delete them. Move them away or "
                "give a new directory")
    return None
