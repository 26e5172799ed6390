"""A chemprop cell's training state between processes: the file it resumes from.

With ``state_dir`` (:func:`~exlm_chem.benchmark.chemprop_method.chemprop_method`) a cell
writes its whole training state after every epoch to one file there (a Lightning
checkpoint: weights, optimizer, LR schedule, epoch counter, the kept epoch's weights and
loss, the sampler's random state; a few MB), named by task, seed, features and a hash of
what a resume must share (data checksum, split indices, settings, epoch cap, time cap,
chemprop version), and written to a temporary file renamed into place, so a kill
mid-write leaves the previous epoch whole. A file under the cell's name whose recorded
settings differ is refused, never overwritten. The file goes once the cell is scored.

Here: where the file lives and what it must match (:func:`cell_state`,
:class:`CellState`), and the Lightning callback that writes it after every epoch
(:class:`SaveState`). What rides in it beside Lightning's own state (the kept epoch, the
sampler's random state) is the training's: :mod:`exlm_chem.benchmark.chemprop_method`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.benchmark.chemprop_features import chemprop_version, descriptor_featurizer
from exlm_chem.benchmark.records import Budget
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.files.safe_write import atomic_path

__all__ = ["CellState", "SaveState", "cell_state"]

logger = logging.getLogger(__name__)


#: top-level checkpoint key of what a resume must match
_FINGERPRINT_KEY = "exlm_chem_chemprop_cell"


@dataclass(frozen=True)
class CellState:
    """Where one cell keeps its training state between processes, and what it must match."""

    path: Path
    fingerprint: dict
    label: str  # "muv seed 0 (rdkit2d)", for the log
    n_epochs: int

    def saved_epochs(self) -> int | None:
        """How many epochs the state file holds; None when there is no file.

        Raises
        ------
        ValueError
            When the file was written for other settings, data or split, or cannot be read.
        """
        if not self.path.is_file():
            return None
        saved, epochs = _read_state(self.path)
        if saved != self.fingerprint:
            differ = sorted(k for k in {*saved, *self.fingerprint}
                            if saved.get(k) != self.fingerprint.get(k))
            raise ValueError(f"{self.path}: chemprop state written for another cell (differs "
                             f"in {', '.join(differ)}); refusing to resume from or overwrite "
                             "it: delete the file to train this cell from epoch 0")
        return epochs

    def write(self, trainer) -> None:
        """Checkpoint ``trainer`` through the package's atomic writer, so that a kill
        mid-write leaves the previous epoch's file whole."""
        with atomic_path(self.path, durable=True) as temp:
            trainer.save_checkpoint(temp)

    def remove(self) -> None:
        """Delete the file (the cell is scored)."""
        self.path.unlink(missing_ok=True)


def _read_state(path: Path) -> tuple[dict, int]:
    """(fingerprint, epochs done) of a state file."""
    import torch

    try:  # tensors and plain values only: the file may come from another machine
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        # saved at the end of an epoch, before Lightning counts it as completed
        return dict(checkpoint[_FINGERPRINT_KEY]), int(checkpoint["epoch"]) + 1
    except Exception as error:
        raise ValueError(f"{path}: not a readable chemprop state file ({error}); delete it "
                         "to train this cell from epoch 0") from error


def _split_sha256(data: TaskData) -> str:
    digest = hashlib.sha256()
    for part in (data.train, data.valid, data.test):
        rows = np.ascontiguousarray(part, dtype=np.int64)
        digest.update(len(rows).to_bytes(8, "little") + rows.tobytes())
    return digest.hexdigest()


def cell_state(state_dir: Path, data: TaskData, seed: int, settings: dict[str, Any],
               n_epochs: int, budget: Budget, features: str | None) -> CellState:
    """The cell's state file: named by task, seed and features, with a hash of everything a
    resume must share, so cells of other splits or budgets in one folder never collide.

    Parameters
    ----------
    state_dir : Path
        The folder of the state files (created if missing).
    data, seed, features
        The cell, as :func:`~exlm_chem.benchmark.chemprop_method.chemprop_method` got it.
    settings : dict
        Its ``ChempropSettings`` as :func:`dataclasses.asdict` gives them.
    n_epochs : int
        The epochs the cell trains (the settings' epochs capped by the budget).
    budget : Budget
        Its ``max_minutes`` is part of what a resume must share.

    Returns
    -------
    CellState
        The file's path, the fingerprint it must hold, the cell's label for the log.
    """
    fingerprint = {
        "task": data.name, "task_type": data.task_type, "data_sha256": data.data_sha256,
        "split_sha256": _split_sha256(data), "seed": int(seed), "features": features,
        "descriptors": descriptor_featurizer()[0] if features else None,
        "settings": settings, "n_epochs": int(n_epochs),
        "max_minutes": budget.max_minutes, "chemprop_version": chemprop_version(),
    }
    # through JSON, so the fingerprint compares equal to one read back from a checkpoint
    text = json.dumps(fingerprint, sort_keys=True)
    short = hashlib.sha256(text.encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{data.name}_seed{seed}_{features or 'plain'}")
    state_dir.mkdir(parents=True, exist_ok=True)
    label = f"{data.name} seed {seed}" + (f" ({features})" if features else "")
    return CellState(state_dir / f"{name}_{short}.ckpt", json.loads(text), label,
                     int(n_epochs))


class SaveState:
    """Lightning callback: the cell's state file after every epoch, with one log line."""

    def __new__(cls, cell: CellState):
        import lightning.pytorch as pl

        class SaveState(pl.Callback):
            def __init__(self, cell: CellState) -> None:
                self.cell = cell

            def on_train_epoch_end(self, trainer, module) -> None:
                # the epoch's validation (and _KeepBest) has run; Lightning resumes a
                # checkpoint taken here at the next epoch
                self.cell.write(trainer)
                logger.info("%s: epoch %d/%d saved to %s", self.cell.label,
                            trainer.current_epoch + 1, self.cell.n_epochs, self.cell.path)

            def on_save_checkpoint(self, trainer, module, checkpoint: dict) -> None:
                checkpoint[_FINGERPRINT_KEY] = self.cell.fingerprint
                # chemprop's hyper-parameters hold modules and classes, which a
                # weights-only load refuses; the resumed model is built from settings
                checkpoint.pop("hyper_parameters", None)

        return SaveState(cell)
