"""Fine-tuning an ExLM encoder on labelled molecules: the paper's molecular protocol.

Input ``[BOS] SMILES [EOS]`` with BOS and EOS expanded to ``k`` copies as in
pre-training for ExLM, unexpanded for an MLM twin
(:func:`~exlm_chem.data.inference_inputs.inference_expansion`; no transition head is
computed); the first BOS copy is pooled and fed to a
:class:`~exlm_chem.model.heads.PredictionHead`. Classification minimises
binary cross-entropy over the labelled entries only (NaN = missing); regression minimises
the squared error on targets standardised per task, and the standardisation is folded
into the head's last layer at the end, so the returned network predicts in the original
units. After every epoch the validation set is scored; the best epoch's weights are put
back (classification: highest mean ROC-AUC over tasks with both classes; regression:
lowest mean RMSE).

Made for short GPU runs: molecules are tokenised and expanded once before the first
epoch (:mod:`exlm_chem.data.finetune_data`), the training set sits on the device, the forward
pass runs under bf16 autocast on CUDA (fp32 elsewhere), and a training step makes no
host-device synchronisation: batch widths and "has labels" come from host-side arrays,
the loss is summed on the device and read once per epoch.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from exlm_chem.data.augment import EpochViews
from exlm_chem.data.finetune_data import EncodedSet
from exlm_chem.device import autocast
from exlm_chem.metrics import mean_rmse, mean_roc_auc
from exlm_chem.model.molecule_model import PREDICT, MoleculeModel
from exlm_chem.presets import FinetuneSettings
from exlm_chem.train.epoch_loop import EpochRecord, LoopSettings, Step, run_epochs, shuffled_batches
from exlm_chem.train.micro_batches import STEP_TOKENS, micro_batches

__all__ = ["FinetuneResult", "LabelledSmiles", "finetune", "masked_mean_loss"]

logger = logging.getLogger(__name__)

ADAM_BETAS = (0.9, 0.99)  # Uni-Mol fine-tuning recipe; the paper's Table 8 leaves them out
ADAM_EPS = 1e-6
TASKS = ("classification", "regression")


class LabelledSmiles(NamedTuple):
    smiles: Sequence[str] | Sequence[np.ndarray]  # N valid SMILES, or token id rows
    labels: np.ndarray  # [N, T] float; NaN where missing
    # [N, F] scaled per-molecule features for a net whose head reads them (else None)
    features: np.ndarray | None = None
    # [N, d] pooled states under the initial encoder, for fitting the head first (else None)
    states: np.ndarray | None = None

    def rows(self, idx: np.ndarray) -> LabelledSmiles:
        """The molecules ``idx`` (an index array), their labels, features and states."""
        return LabelledSmiles([self.smiles[i] for i in idx], self.labels[idx],
                              *(None if a is None else a[idx]
                                for a in (self.features, self.states)))


class FinetuneResult(NamedTuple):
    best_epoch: int  # epoch whose weights were restored; 0 = the initial weights
    best_score: float  # its selection metric
    metric: str  # "roc_auc" | "valid_loss" | "rmse" | "last_epoch" (no validation set)
    history: list[EpochRecord]
    n_steps: int  # optimiser steps taken
    stopped_early: bool  # the max_minutes budget ran out


def masked_mean_loss(outputs: torch.Tensor, targets: torch.Tensor, task: str) -> torch.Tensor:
    """Mean loss [] over labelled entries (targets not NaN); NaN when there are none.

    No boolean indexing and no branch on device values: safe inside a training step that
    must not synchronise with the host.
    """
    labelled = ~torch.isnan(targets)  # [B, T]
    safe = torch.where(labelled, targets, torch.zeros_like(targets))
    each = (F.binary_cross_entropy_with_logits(outputs, safe, reduction="none")
            if task == "classification" else (outputs - safe).square())
    return torch.where(labelled, each, torch.zeros_like(each)).sum() / labelled.sum()


def masked_loss(outputs: torch.Tensor, targets: torch.Tensor, task: str) -> torch.Tensor | None:
    """Mean loss over labelled entries; None when the batch has none (reads the device)."""
    return masked_mean_loss(outputs, targets, task) if (~torch.isnan(targets)).any() else None


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def optimizer_step(
    net: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    loss: torch.Tensor | None,
    clip_norm: float,
    accumulated: bool = False,
) -> float:
    """Backward, clip, update and advance the schedule; returns the lr the step used.

    A ``None`` loss (a batch without labels) still advances the schedule. With
    ``accumulated`` the gradients are already in place (micro-batches): no backward.
    """
    if not accumulated:
        optimizer.zero_grad(set_to_none=True)
    if loss is not None:
        if not accumulated:
            loss.backward()
        if clip_norm > 0:
            nn.utils.clip_grad_norm_(net.parameters(), clip_norm)
        optimizer.step()
    lr = optimizer.param_groups[0]["lr"]
    scheduler.step()
    return lr


def make_optimizer(
    net: torch.nn.Module, settings: FinetuneSettings, total_steps: int,
    betas: tuple[float, float] = ADAM_BETAS,
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW with warm-up (``settings.warmup_ratio``) then linear decay over ``total_steps``."""
    warmup = round(settings.warmup_ratio * total_steps)
    # fused: one kernel for all parameters on CUDA; CPU keeps the default (same results)
    fused = {"fused": True} if next(net.parameters()).device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(net.parameters(), lr=settings.lr, betas=betas,
                                  eps=ADAM_EPS, weight_decay=settings.weight_decay, **fused)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, warmup, total_steps))
    return optimizer, scheduler


def selection_metric(task: str, valid_labels: np.ndarray | None) -> str:
    """How the best epoch is chosen: "roc_auc" | "valid_loss" | "rmse" | "last_epoch"."""
    if valid_labels is None or len(valid_labels) == 0:
        return "last_epoch"
    if task == "regression":
        return "rmse"
    labels = np.asarray(valid_labels, dtype=np.float64)
    two_class = any(np.unique(col[~np.isnan(col)]).size == 2 for col in labels.T)
    return "roc_auc" if two_class else "valid_loss"  # AUC undefined on every task


def _evaluate(net: MoleculeModel, valid: LabelledSmiles, rows: list[np.ndarray], task: str,
              metric: str, mean: torch.Tensor, scale: torch.Tensor,
              batch_size: int) -> tuple[float, float]:
    """(validation loss on the training scale, selection score) of the current weights;
    ``rows``: the validation molecules' token ids."""
    outputs = torch.from_numpy(net.run(rows, PREDICT, batch_size, valid.features))  # [N, T]
    return _scored(outputs, valid.labels, task, metric, mean, scale)


def _scored(outputs: torch.Tensor, valid_labels: np.ndarray, task: str, metric: str,
            mean: torch.Tensor, scale: torch.Tensor) -> tuple[float, float]:
    """(loss on the training scale, selection score) of outputs [N, T] on the CPU."""
    labels = torch.as_tensor(np.asarray(valid_labels, dtype=np.float64))  # [N, T]
    targets = (labels - mean.double()) / scale.double()  # float64: large targets stay exact
    loss = masked_loss(outputs, targets.float(), task)
    loss_value = float(loss) if loss is not None else float("nan")
    if metric == "valid_loss" or not torch.isfinite(outputs).all():
        return loss_value, loss_value if metric == "valid_loss" else float("nan")
    if metric == "roc_auc":
        return loss_value, mean_roc_auc(valid_labels, outputs.numpy()).mean
    return loss_value, mean_rmse(valid_labels, (outputs * scale + mean).numpy()).mean


def is_better(score: float, best: float, metric: str) -> bool:
    """Whether a validation ``score`` beats ``best`` (NaN never wins; NaN best always loses)."""
    return not math.isnan(score) and (
        math.isnan(best) or (score > best if metric == "roc_auc" else score < best))


def finetune(
    net: MoleculeModel,
    train: LabelledSmiles,
    settings: FinetuneSettings,
    task: str = "classification",
    valid: LabelledSmiles | None = None,
    progress: bool = False,
    max_minutes: float | None = None,
    seed: int = 0,
    augment: int = 0,
    length_buckets: bool = True,
    patience: int | None = None,
    head_first: bool = False,
) -> FinetuneResult:
    """Fine-tune ``net`` in place and restore its best epoch's weights.

    Parameters
    ----------
    net : MoleculeModel
        On the device to train on; its encoder dropout is whatever it was built with.
    train, valid : LabelledSmiles
        Valid SMILES and [N, T] labels with NaN for missing entries, T = ``n_out``; with
        [N, F] scaled features when ``net.n_features`` > 0.
    settings : FinetuneSettings
    task : {"classification", "regression"}
    progress : bool
        Show a tqdm bar over epochs.
    max_minutes : float, optional
        Stop after the step that exhausts this wall-time budget (the partial epoch is
        still validated).
    seed : int
        Seeds the order of the training molecules. Dropout draws from torch's global
        generator: seed it (or fork it) around this call for reproducible runs.
    augment : int
        Each epoch trains on the given SMILES plus ``augment`` randomized SMILES of every
        molecule, drawn afresh per epoch from ``seed``
        (:class:`~exlm_chem.data.augment.EpochViews`); 0 = no augmentation.
    length_buckets : bool
        Batches of molecules of similar length (:func:`~exlm_chem.data.batching.
        bucketed_batches`), far less padding; ``False``: plain random batches.
    patience : int, optional
        Stop once this many epochs in a row have not improved the validation score (needs
        ``valid``; the best epoch's weights are kept either way).
    head_first : bool
        LP-FT (Kumar et al. 2022): before the first epoch, train the head alone on
        ``train.states`` (the pooled states under the initial encoder), keeping its best
        step on ``valid.states`` (:func:`fit_head`), so that fine-tuning starts from a head
        that already reads the pre-trained features instead of moving the encoder towards
        a random one.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    n_out = net.n_out
    for name, part in (("train", train), ("valid", valid)):
        if part is not None and np.shape(part.labels) != (len(part.smiles), n_out):
            raise ValueError(f"{name} labels must be [{len(part.smiles)}, {n_out}], got "
                             f"{np.shape(part.labels)}")
    device = net.device
    labels = np.asarray(train.labels, dtype=np.float64)  # [N, T]
    mean, scale = np.zeros(n_out), np.ones(n_out)
    if task == "regression" and len(train.smiles):
        mean, scale = target_scaling(labels)
    targets = torch.as_tensor((labels - mean) / scale, dtype=torch.float32).to(device)
    mean, scale = (torch.as_tensor(v, dtype=torch.float32) for v in (mean, scale))
    metric = selection_metric(task, None if valid is None else valid.labels)
    if head_first:
        fit_head(net, train, targets, task, valid, metric, mean, scale, seed)

    views = EpochViews(train.smiles, augment, seed) if augment else None
    n, bs = len(views) if views else len(train.smiles), settings.batch_size
    total_steps = settings.epochs * math.ceil(n / bs)
    optimizer, scheduler = make_optimizer(net, settings, total_steps, ADAM_BETAS)
    # tokenised (and the training set expanded) once, before the first epoch
    train_inputs = (net.encode(train.smiles, train.features).to(device) if views is None
                    else None)
    valid_rows = net.token_rows(valid.smiles) if valid is not None else None
    label_counts = (~np.isnan(np.asarray(train.labels, dtype=np.float64))).sum(1)  # [N]
    step_tokens = STEP_TOKENS if device.type == "cpu" else None  # GPU memory is ample
    order_rng = np.random.default_rng(seed)

    def epoch_batches(epoch: int) -> list[_Batch]:
        inputs, epoch_targets, epoch_counts = train_inputs, targets, label_counts
        if views is not None:  # this epoch's randomized strings, re-encoded
            view = views.epoch(epoch)
            # a view is the same molecule: its features are the molecule's, not recomputed
            features = None if train.features is None else np.asarray(train.features)[view.rows]
            inputs = net.encode(view.smiles, features).to(device)
            epoch_targets = targets[torch.from_numpy(view.rows).to(device)]
            epoch_counts = label_counts[view.rows]
        order = shuffled_batches(order_rng, bs, n, inputs.lengths if length_buckets else None)
        return _device_batches(order, inputs, epoch_targets, epoch_counts)

    def step(batch: _Batch) -> Step:
        return _train_step(net, batch, task, optimizer, scheduler, settings.clip_norm,
                           step_tokens)

    def validate() -> tuple[float, float]:
        return _evaluate(net, valid, valid_rows, task, metric, mean, scale, 2 * bs)

    loop = LoopSettings(settings.epochs, max_minutes, patience,
                        f"fine-tune ({metric})" if progress else None, name="fine-tuning")
    run = run_epochs(net, loop, epoch_batches, step,
                     validate if valid is not None and metric != "last_epoch" else None,
                     lambda score, best: is_better(score, best, metric))
    if task == "regression":
        _fold_scaling(net.head.out, mean.to(device), scale.to(device))
    return FinetuneResult(run.best_epoch, run.best_score, metric, run.history, run.n_steps,
                          run.stopped_early)


def freeze_lower_layers(encoder: nn.Module, n_top: int) -> None:
    """Leave only the top ``n_top`` blocks of ``encoder`` (and its final LayerNorm)
    trainable: the token embedding and the blocks below stop taking gradients, so a
    backward pass ends at the lowest trainable block. ``n_top`` >= the encoder's depth
    leaves everything trainable."""
    if n_top < 1:
        raise ValueError(f"train_layers must be >= 1, got {n_top}")
    n_layers = len(encoder.blocks)
    if n_top >= n_layers:
        return
    encoder.embed_tokens.requires_grad_(False)
    for block in encoder.blocks[: n_layers - n_top]:
        block.requires_grad_(False)


HEAD_STEPS = 300  # full-batch steps of fit_head; the best on the validation states is kept
HEAD_LR = 1e-3
HEAD_WEIGHT_DECAY = 0.01
_HEAD_CHECK_EVERY = 10


def fit_head(net: MoleculeModel, train: LabelledSmiles, targets: torch.Tensor, task: str,
             valid: LabelledSmiles | None, metric: str, mean: torch.Tensor,
             scale: torch.Tensor, seed: int) -> None:
    """Train ``net.head`` alone on the frozen states ``train.states`` [N, d] (full batch,
    AdamW, :data:`HEAD_STEPS` steps) against ``targets`` [N, T] (on the training scale);
    with ``valid`` states and a validation ``metric``, every tenth step is scored on them
    and the best is kept."""
    if train.states is None or (valid is not None and valid.states is None):
        raise ValueError("head_first needs the pooled states of the training (and "
                         "validation) molecules")
    head, device = net.head, net.device

    def tensors(part: LabelledSmiles) -> tuple[torch.Tensor, torch.Tensor | None]:
        features = (None if part.features is None else
                    torch.as_tensor(part.features, dtype=torch.float32).to(device))
        return torch.as_tensor(part.states, dtype=torch.float32).to(device), features

    x, features = tensors(train)  # [N, d], [N, F]
    scored = valid is not None and metric != "last_epoch"
    valid_x = tensors(valid) if scored else None
    optimizer = torch.optim.AdamW(head.parameters(), lr=HEAD_LR, weight_decay=HEAD_WEIGHT_DECAY)
    best, best_state = float("nan"), None
    was_training = head.training
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # dropout draws
        for step in range(1, HEAD_STEPS + 1):
            head.train()
            loss = masked_mean_loss(head(x, features), targets, task)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if scored and step % _HEAD_CHECK_EVERY == 0:
                head.eval()
                with torch.no_grad():
                    outputs = head(*valid_x).float().cpu()  # [N_valid, T]
                score = _scored(outputs, valid.labels, task, metric, mean, scale)[1]
                if is_better(score, best, metric):
                    best = score
                    best_state = {k: v.detach().clone() for k, v in head.state_dict().items()}
    if best_state is not None:
        head.load_state_dict(best_state)
    head.train(was_training)
    logger.info("head fitted on frozen states: best validation %s %.4f", metric, best)


def target_scaling(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-task mean and standard deviation [T] of labels [N, T] (NaN = missing).

    Computed in float64: squares of values near 1e20 overflow float32 and those of values
    near 1e-25 underflow it. A task without spread (or one too small for float32) gets
    scale 1.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a task with no label in train
        mean = np.nan_to_num(np.nanmean(labels, 0))
        spread = np.sqrt(np.nanmean(np.square(labels - mean), 0))
    usable = np.isfinite(spread) & (spread > np.finfo(np.float32).tiny)
    return mean, np.where(usable, spread, 1.0)


class _Batch(NamedTuple):
    inputs: EncodedSet  # the epoch's encoded molecules
    targets: torch.Tensor  # [N, T] the epoch's targets, on the device
    label_counts: np.ndarray  # [N] labelled entries per row, on the host
    idx: np.ndarray  # [B] the batch's rows, on the host
    rows: torch.Tensor  # [B] the same rows, on the device


def _device_batches(order: list[np.ndarray], inputs: EncodedSet, targets: torch.Tensor,
                    label_counts: np.ndarray) -> list[_Batch]:
    """The epoch's batches, their device rows sliced from one copy of the epoch's order:
    one host-to-device copy per epoch, none per step."""
    perm = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    perm_device = torch.from_numpy(perm).to(targets.device)
    ends = np.cumsum([len(idx) for idx in order], dtype=np.int64).tolist()
    return [_Batch(inputs, targets, label_counts, idx, perm_device[end - len(idx) : end])
            for idx, end in zip(order, ends, strict=True)]


def _train_step(net: MoleculeModel, batch: _Batch, task: str,
                optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler, clip_norm: float,
                step_tokens: int | None) -> Step:
    """One optimiser step without host-device synchronisation.

    Batch widths and label counts are read from host arrays. A batch of more than
    ``step_tokens`` real tokens runs as micro-batches (:mod:`exlm_chem.train.micro_batches`)
    whose gradients add up to the whole batch's.
    """
    inputs, targets, label_counts, idx, rows = batch
    pieces = micro_batches(idx, inputs.lengths, step_tokens)
    if len(pieces) > 1:
        loss = _accumulate(net, inputs, targets, label_counts, rows, idx, pieces, task,
                           optimizer)
        return Step(loss, optimizer_step(net, optimizer, scheduler, loss, clip_norm,
                                         accumulated=True))
    with autocast(targets.device):
        outputs = net(*inputs.batch(rows, idx))  # [B, T]
    labelled = label_counts[idx].any()
    loss = masked_mean_loss(outputs.float(), targets[rows], task) if labelled else None
    return Step(loss, optimizer_step(net, optimizer, scheduler, loss, clip_norm))


def _accumulate(net: MoleculeModel, inputs: EncodedSet, targets: torch.Tensor,
                label_counts: np.ndarray, rows: torch.Tensor, idx: np.ndarray,
                pieces: list[np.ndarray], task: str,
                optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
    """Gradients of the batch's mean loss, summed over micro-batches; the loss (detached)
    or None when the batch has no label."""
    optimizer.zero_grad(set_to_none=True)
    total = int(label_counts[idx].sum())
    if not total:
        return None
    device, loss, first = targets.device, None, 0
    for piece in pieces:
        piece_rows = rows[first : first + len(piece)]
        first += len(piece)
        labelled = int(label_counts[piece].sum())
        if not labelled:  # its mean would be 0/0; it adds nothing to the batch's loss
            continue
        with autocast(device):
            outputs = net(*inputs.batch(piece_rows, piece))  # [b, T]
        part = masked_mean_loss(outputs.float(), targets[piece_rows], task) * (labelled / total)
        part.backward()
        loss = part.detach() if loss is None else loss + part.detach()
    return loss


@torch.no_grad()
def _fold_scaling(layer: nn.Linear, mean: torch.Tensor, scale: torch.Tensor) -> None:
    """Make ``layer`` output ``y * scale + mean``: predictions in the original units."""
    layer.weight.mul_(scale[:, None])
    layer.bias.mul_(scale).add_(mean)
