"""Where a save may write: only over what exlm_chem wrote itself, and only where it can.

A directory counts as a saved model when its ``metadata.json`` is a JSON object whose
``format`` is one of ours; it may be replaced only when it holds nothing but the files a
save writes (:data:`MODEL_FILES`) and, when a kind is asked for, is of that kind: a
fitted estimator is never saved over a pre-trained checkpoint, nor the reverse.
:func:`check_output_dir` and :func:`check_output_file` make these refusals, and check
that the place can be written, before long work starts.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from exlm_chem.errors import OutputPathError
from exlm_chem.files.debris import temp_prefix

#: A fitted estimator's tree head (``sklearn/persistence.py``): its frozen encoder, its
#: boosted trees and, for the classifier's forest member, the forest, each as arrays.
TREE_ENCODER_FILE = "tree_encoder.safetensors"
TREE_ARRAYS_FILE = "tree_head.safetensors"
TREE_FOREST_FILE = "tree_forest.safetensors"
#: Files an exlm_chem save (checkpoint, fitted estimator, pre-training run checkpoint,
#: shipped model card) may write into a model directory.
MODEL_FILES = frozenset({
    "config.json", "model.safetensors", "vocab.txt", "metadata.json",
    "training_state.json", "training_state.safetensors", "tokenizer.json", "MODEL_CARD.md",
    TREE_ENCODER_FILE, TREE_ARRAYS_FILE, TREE_FOREST_FILE,
})  # fmt: skip
#: An ensemble's other members (``sklearn/persistence.py``): ``member_<i>.safetensors``.
MEMBER_FILE = re.compile(r"member_[1-9][0-9]*\.safetensors")


def member_file(i: int) -> str:
    """The file of an ensemble's member ``i`` (1, 2, ...; member 0 is ``model.safetensors``)."""
    if i < 1:
        raise ValueError(f"member files are numbered from 1, not {i}")
    return f"member_{i}.safetensors"


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
    foreign = [n for n in entries if not (n in MODEL_FILES or MEMBER_FILE.fullmatch(n))
               or not (path / n).is_file()]
    if foreign:
        return (f"{path} holds a saved model and also files exlm_chem did not write "
                f"({_listing(foreign)}); saving there would delete them. Move them away or "
                "give a new directory")
    return None


def _refuse_special(path: Path) -> None:
    """Targets that cannot be replaced as a whole: the working directory and the like."""
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise OutputPathError(f"{path} is the current directory or holds it; a model is "
                              "saved by replacing its directory as a whole, so give a new "
                              f"subdirectory instead (for example {path / 'model'})")
    if resolved.parent == resolved or os.path.ismount(resolved):
        raise OutputPathError(f"{path} is a file-system root or mount point; give a "
                              "subdirectory of it instead")


def _probe_writable(directory: Path, what: Path) -> None:
    """Create and remove a temporary entry in ``directory`` (or its nearest ancestor)."""
    existing = directory
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputPathError(f"cannot write {what}: {existing} is not a directory")
    try:
        if existing == directory:
            os.rmdir(tempfile.mkdtemp(dir=directory, prefix=temp_prefix(what, "tmp")))
        elif not os.access(existing, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "permission denied", str(existing))
    except OSError as err:
        raise OutputPathError(f"cannot write {what}: {existing} is not writable "
                              f"({err.strerror or err})") from err


def check_output_dir(path: str | os.PathLike[str], kind: str | None = None) -> Path:
    """Refuse now what :func:`atomic_directory` would refuse at the end.

    Raises :class:`~exlm_chem.errors.OutputPathError` when ``path`` is the working
    directory, a file, a directory holding anything but a saved model of format ``kind``
    (any exlm_chem kind when None), or in a place that cannot be written.
    """
    path = Path(path).expanduser()
    _refuse_special(path)
    target = path.resolve()
    reason = replace_refusal(target, kind)
    if reason:
        raise OutputPathError(reason)
    _probe_writable(target.parent, target)
    return target


def check_output_file(path: str | os.PathLike[str]) -> Path:
    """Refuse an output file path that is a directory or cannot be written."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise OutputPathError(f"{path} is a directory; give a file name for the output")
    _probe_writable(path.parent, path)
    return path
