"""A pre-training run's checkpoints: written, snapshotted, resumed and started from.

A run directory ``OUT`` holds ``checkpoint/`` (the weights in the package's checkpoint
format, :mod:`exlm_chem.model.checkpoint`, plus the optimizer and RNG state of
:mod:`exlm_chem.train.training_state`, so a resumed run continues exactly where it stopped)
and ``snapshots/step_NNNNNNN`` (weights and metadata only: the points of a learning curve).
Both are assembled beside their target and swapped in whole
(:func:`~exlm_chem.files.safe_write.atomic_directory`). Only rank 0 writes.

The functions read the run from its :class:`~exlm_chem.train.pretrain.Pretrainer`
(``trainer``): its settings, model, optimizer, corpus checksums and lineage.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from exlm_chem.files.safe_write import atomic_directory
from exlm_chem.model.checkpoint import load_checkpoint, save_checkpoint
from exlm_chem.train.training_state import SCALARS, read_training_state, write_training_state

__all__ = ["CHECKPOINT_DIR", "SNAPSHOT_DIR", "can_resume", "resume_run", "run_checkpoint_dir",
           "run_metadata", "save_run", "save_snapshot", "start_from"]

logger = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoint"  # OUT/checkpoint: the latest state, what --resume reads
SNAPSHOT_DIR = "snapshots"  # OUT/snapshots/step_NNNNNNN: weights along the run


def run_checkpoint_dir(out: str | Path) -> Path:
    """The checkpoint folder of run directory ``out``."""
    return Path(out) / CHECKPOINT_DIR


def can_resume(out: str | Path) -> bool:
    """Whether run directory ``out`` holds a checkpoint with its training state."""
    return (run_checkpoint_dir(out) / SCALARS).exists()


def run_metadata(trainer: Any, progress: dict) -> dict:
    """The checkpoint metadata of ``trainer``'s run at ``progress``.

    Parameters
    ----------
    trainer : Pretrainer
        The run.
    progress : dict
        The loop's progress record (step, data position, tokens, times, last validation).

    Returns
    -------
    dict
        JSON-serialisable: what the run is (settings, recipe, corpus checksums, descriptor
        scaler, budget, lineage) and how far it went.
    """
    args, config = trainer.args, trainer.config
    return {
        "objective": args.objective,
        "steps": progress["step"],
        "tokens_seen": progress["tokens_seen"],
        "invalid_paths": progress["invalid_paths"],
        "wall_seconds": progress["wall_seconds"],
        "device": (torch.cuda.get_device_name(trainer.device) if trainer.device.type == "cuda"
                   else "cpu"),
        "corpus_sha256": trainer.corpus_checksums,
        "hygiene": trainer.hygiene_summary,
        "corpus_counts": trainer.corpus_counts,  # what preparation kept of the files' lines
        "pretrain_args": asdict(args),
        "budget": trainer.budget,
        "last_validation": progress.get("last_validation"),
        "recipe": {"objective": args.objective, "mask_ratio": args.mask_ratio,
                   "token_weight": args.token_weight,
                   "aux_weight": args.aux_weight, "aux_clip": args.aux_clip,
                   "aux_share": args.aux_share,
                   "contrast_weight": args.contrast_weight,
                   "contrast_temperature": args.contrast_temperature,
                   "translate_weight": args.translate_weight,
                   "d_model": config.d_model,
                   "k_states": config.k_states, "dropout": config.dropout},
        "descriptors": trainer.descriptor_info,  # the head's targets and their scaler
        "cpu_seconds": progress.get("cpu_seconds"),
        # where the data stream stood: a run started --init-from these weights goes on there
        "progress": {k: progress[k] for k in ("epoch", "position", "tokens_seen",
                                              "cpu_seconds", "wall_seconds")},
        "lineage": trainer.lineage,  # earlier segments this run started from (init_from)
    }


def save_run(trainer: Any, progress: dict) -> None:
    """Write ``OUT/checkpoint``: weights, metadata, optimizer and RNG state, and the
    trainer's extra files (:meth:`~exlm_chem.train.pretrain.Pretrainer.checkpoint_files`)."""
    if trainer.rank != 0:
        return
    with atomic_directory(run_checkpoint_dir(trainer.out)) as tmp:
        save_checkpoint(tmp, trainer.model, trainer.config, trainer.tokenizer.tokens,
                        run_metadata(trainer, progress))
        write_training_state(tmp, trainer.optimizer, progress)
        trainer.checkpoint_files(tmp)


def save_snapshot(trainer: Any, progress: dict) -> None:
    """Weights and metadata only (no optimizer state) in ``OUT/snapshots/step_NNNNNNN``:
    the points of a learning curve, probed after the run."""
    if trainer.rank != 0:
        return
    metadata = {**run_metadata(trainer, progress), "snapshot": True}
    target = Path(trainer.out) / SNAPSHOT_DIR / f"step_{progress['step']:07d}"
    with atomic_directory(target) as tmp:
        save_checkpoint(tmp, trainer.model, trainer.config, trainer.tokenizer.tokens, metadata)
        trainer.checkpoint_files(tmp)


def resume_run(trainer: Any) -> tuple[dict, list[dict]]:
    """Load ``OUT/checkpoint`` into ``trainer``: its weights, optimizer and RNG state.

    Returns
    -------
    progress : dict
        The saved progress record, from which the loop goes on.
    lineage : list of dict
        The earlier segments the run started from (``init_from``).
    """
    directory = run_checkpoint_dir(trainer.out)
    saved, _, _ = load_checkpoint(directory, map_location=trainer.device)
    trainer.model.load_state_dict(saved.state_dict())
    progress = read_training_state(directory, trainer.optimizer)
    lineage = json.loads((directory / "metadata.json").read_text()).get("lineage", [])
    logger.info("resumed at step %d", progress["step"])
    return progress, lineage


def start_from(trainer: Any, directory: Path, progress: dict) -> tuple[dict, list[dict]]:
    """Load a milestone's weights into ``trainer``; carry its tokens, CPU time and, when it
    read the same corpus, its data position (another corpus is read from its start).

    Parameters
    ----------
    trainer : Pretrainer
        The run, its model built; the optimizer stays fresh.
    directory : Path
        The milestone's checkpoint (``init_from``).
    progress : dict
        The fresh progress record the carried figures go into.

    Returns
    -------
    progress : dict
        ``progress`` with the milestone's figures.
    lineage : list of dict
        The milestone's lineage and the milestone itself.

    Raises
    ------
    ValueError
        The milestone's model has another shape than the run's (dropout aside).
    """
    saved, config, meta = load_checkpoint(directory, map_location=trainer.device)
    ours, theirs = trainer.config.to_dict(), config.to_dict()
    differ = [f"{k}: {theirs[k]!r} there, {ours[k]!r} here" for k in ours
              if ours[k] != theirs[k] and k not in ("dropout", "attention_dropout")]
    if differ:
        raise ValueError(f"init_from {directory}: another model shape ({'; '.join(differ)})")
    trainer.model.load_state_dict(saved.state_dict())
    carried = meta.get("progress") or {"tokens_seen": meta.get("tokens_seen", 0),
                                       "cpu_seconds": meta.get("cpu_seconds") or 0.0}
    # paths differ between machines; the files' checksums say whether it is one corpus
    if sorted(meta.get("corpus_sha256", {}).values()) != sorted(
            trainer.corpus_checksums.values()):
        carried = {k: v for k, v in carried.items() if k not in ("epoch", "position")}
        logger.info("%s was trained on another corpus: reading this one from its start",
                    directory)
    progress = {**progress, **carried}
    lineage = [*meta.get("lineage", []),
               {"init_from": str(directory), "steps": meta.get("steps"),
                "tokens_seen": progress["tokens_seen"],
                "cpu_seconds": progress["cpu_seconds"],
                "recipe": meta.get("recipe")}]
    logger.info("starting from %s (%d tokens seen)", directory, progress["tokens_seen"])
    return progress, lineage
