"""The one epoch loop of every supervised trainer in the package.

Molecular fine-tuning (:mod:`exlm_chem.train.finetune`), text fine-tuning
(:mod:`exlm_chem.text.finetune`) and the AttentiveFP baseline
(:mod:`exlm_chem.benchmark.attentivefp`) differ in their batches, their step and their
validation score; everything around them is here: the epochs, the steps, the time budget
(``max_minutes``), validation after every epoch, the best epoch's weights, patience, the
history and the progress bar.

A trainer hands over three functions: ``batches(epoch)`` (that epoch's batches, in order;
:func:`shuffled_batches` draws the usual orders), ``step(batch)`` (one optimiser step,
returning a :class:`Step`) and ``validate()`` (``(valid_loss, score)`` of the current
weights), plus ``better(score, best)``, the rule that picks the best epoch.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np
import torch
from torch import nn

from exlm_chem.data.batching import bucketed_batches

__all__ = ["EpochRecord", "LoopResult", "LoopSettings", "Step", "run_epochs",
           "shuffled_batches"]

logger = logging.getLogger(__name__)

BatchT = TypeVar("BatchT")


class EpochRecord(NamedTuple):
    epoch: int  # 1-based
    train_loss: float  # mean over the epoch's steps
    valid_loss: float  # NaN without a validation set
    valid_score: float  # the selection metric (see FinetuneResult.metric); NaN if none
    lr: float  # learning rate used by the epoch's last step
    seconds: float


class Step(NamedTuple):
    loss: torch.Tensor | None  # [] the step's loss; None: the batch had no label
    lr: float  # learning rate the step used


@dataclass(frozen=True)
class LoopSettings:
    epochs: int
    max_minutes: float | None = None  # stop after the step that spends it
    patience: int | None = None  # stop after this many epochs without a better score
    progress: str | None = None  # a tqdm bar over epochs with this description
    leave: bool = True  # keep the bar on screen once done
    name: str = "training"  # what the log lines call the run

    def __post_init__(self) -> None:
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be None or >= 1, got {self.patience!r}")


class LoopResult(NamedTuple):
    best_epoch: int  # epoch whose weights were kept; 0 = the initial weights
    best_score: float  # its validation score; NaN without validation
    history: list[EpochRecord]
    n_steps: int  # optimiser steps taken
    stopped_early: bool  # the max_minutes budget ran out (patience does not set it)


def shuffled_batches(rng: np.random.Generator, batch_size: int, n: int,
                     lengths: np.ndarray | None = None) -> list[np.ndarray]:
    """One epoch's batches of row indices: length buckets in random order when
    ``lengths`` is given (:func:`~exlm_chem.data.batching.bucketed_batches`), else consecutive
    slices of a random permutation of ``n`` rows."""
    if lengths is not None:
        return bucketed_batches(lengths, batch_size, rng)
    perm = rng.permutation(n)
    return [perm[start : start + batch_size] for start in range(0, n, batch_size)]


def _snapshot(net: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def run_epochs(
    net: nn.Module,
    settings: LoopSettings,
    batches: Callable[[int], Iterable[BatchT]],
    step: Callable[[BatchT], Step],
    validate: Callable[[], tuple[float, float]] | None = None,
    better: Callable[[float, float], bool] | None = None,
    keep_last: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> LoopResult:
    """Train ``net`` for ``settings.epochs`` epochs and keep its best epoch's weights.

    Parameters
    ----------
    net : nn.Module
        Put in train mode before every epoch, in eval mode at the end.
    settings : LoopSettings
    batches : callable
        ``batches(epoch)``: the epoch's batches (1-based epoch), called at its start.
    step : callable
        ``step(batch)``: one optimiser step. Its loss is summed on the device and read once
        per epoch, so a step need not synchronise with the host.
    validate : callable, optional
        ``validate()``: ``(valid_loss, score)`` of the current weights, after every epoch.
        Without it the last epoch is kept and patience does not apply.
    better : callable
        ``better(score, best)``: whether an epoch's score beats the best so far (NaN
        before any epoch won). Required with ``validate``.
    keep_last : bool
        When no epoch beats the rest, keep the last epoch instead of the initial weights.
    clock : callable
        Seconds, for the time budget and the history (tests pass a fake one).
    """
    if validate is not None and better is None:
        raise ValueError("run_epochs needs `better` to choose among validated epochs")
    started = clock()
    best_epoch, best_score = 0, math.nan
    # the initial weights are only put back when no epoch may win
    best_state = _snapshot(net) if validate is not None and not keep_last else None
    history: list[EpochRecord] = []
    n_steps, stopped_early = 0, False
    epochs = range(1, settings.epochs + 1)
    if settings.progress is not None:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc=settings.progress, leave=settings.leave)
    for epoch in epochs:
        epoch_start = clock()
        net.train()
        loss_sum, losses, last_lr = None, 0, math.nan
        for batch in batches(epoch):
            loss, last_lr = step(batch)
            n_steps += 1
            if loss is not None:  # float64 on the device: no read per step
                loss = loss.detach()
                loss_sum = loss.double() if loss_sum is None else loss_sum + loss
                losses += 1
            if settings.max_minutes is not None and (
                    clock() - started > 60 * settings.max_minutes):
                stopped_early = True
                break
        train_loss = float(loss_sum) / losses if losses else math.nan
        valid_loss, score = (math.nan, math.nan) if validate is None else validate()
        history.append(EpochRecord(epoch, train_loss, valid_loss, score, last_lr,
                                   clock() - epoch_start))
        if validate is None:
            best_epoch = epoch  # the weights in place are the last epoch's
        elif better(score, best_score):
            best_epoch, best_score, best_state = epoch, score, _snapshot(net)
        if settings.progress is not None:
            epochs.set_postfix(loss=f"{train_loss:.4f}", valid=f"{score:.4f}")
        logger.debug("%s epoch %s", settings.name, history[-1])
        if stopped_early:
            logger.info("%s stopped after epoch %d: max_minutes=%s spent", settings.name,
                        epoch, settings.max_minutes)
            break
        if (settings.patience is not None and validate is not None
                and epoch - best_epoch >= settings.patience):
            logger.info("%s stopped after epoch %d: no better score for %d epochs",
                        settings.name, epoch, settings.patience)
            break
    if keep_last and best_epoch == 0:
        best_epoch = len(history)  # no restore: the last epoch's weights are in place
    elif best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return LoopResult(best_epoch, best_score, history, n_steps, stopped_early)
