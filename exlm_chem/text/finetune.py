"""Fine-tuning a text ExLM encoder on GLUE, and the runner that reports medians over seeds.

Input ``[CLS] a [SEP]`` or ``[CLS] a [SEP] b [SEP]`` (pairs truncated "longest first")
with ``[CLS]`` and every ``[SEP]`` expanded to ``k`` copies, as in pre-training, where
each ``[SEP]`` was an expanded EOS. The first ``[CLS]`` copy is pooled into the same
:class:`~exlm_chem.model.heads.PredictionHead` as the molecular path: one logit per
class (cross-entropy) or one value for STS-B (squared error). After each epoch the dev
set(s) are scored; the epoch with the best headline metric on the first dev set is kept,
as in RoBERTa's GLUE recipe, and its dev scores are the seed's result. The paper
reports the median over five seeds (``run_glue``).

The optimiser and schedule are the molecular ones (:mod:`exlm_chem.train.finetune`): AdamW,
linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0. The default
settings (:func:`glue_settings`) are one point of the paper's grid (Table 11) plus
RoBERTa's GLUE constants for what the paper leaves out.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from exlm_chem.data.batching import bucketed_batches
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.molecule_model import PREDICT, MoleculeModel
from exlm_chem.presets import FinetuneSettings
from exlm_chem.text.glue import GlueSplit, GlueTask, get_task, glue_metrics, read_glue_split
from exlm_chem.text.tokenizer import TOKENIZER_FILE, TextTokenizer
from exlm_chem.train.epoch_loop import EpochRecord, LoopSettings, Step, run_epochs
from exlm_chem.train.finetune import make_optimizer, optimizer_step

__all__ = [
    "GlueEncoded", "GlueReport", "GlueSeedResult", "encode_split",
    "finetune_glue", "format_glue_report", "glue_settings", "load_text_checkpoint", "run_glue",
]  # fmt: skip

logger = logging.getLogger(__name__)

#: RoBERTa's GLUE fine-tuning Adam betas (fairseq recipe); the paper does not list them.
TEXT_ADAM_BETAS = (0.9, 0.98)
_LARGE_TASKS = ("mnli", "qqp", "qnli", "sst-2")


def glue_settings(task: str | GlueTask) -> FinetuneSettings:
    """Default fine-tuning settings of a GLUE task.

    A point of the paper's search grid (Table 11): lr 2e-5, 6% warm-up, and batch 32 /
    3 epochs for MNLI, QQP, QNLI and SST-2, batch 16 / 10 epochs for the small tasks.
    Weight decay 0.1 and no gradient clipping follow RoBERTa's GLUE recipe.
    """
    task = get_task(task) if isinstance(task, str) else task
    large = task.name in _LARGE_TASKS
    return FinetuneSettings(epochs=3 if large else 10, batch_size=32 if large else 16,
                            lr=2e-5, warmup_ratio=0.06, dropout=0.1, pooler_dropout=0.1,
                            weight_decay=0.1, clip_norm=0.0)


class GlueEncoded(NamedTuple):
    """One split, tokenised."""

    ids: list[np.ndarray]  # per example: [CLS] a [SEP] (b [SEP]), int64, unexpanded
    labels: np.ndarray  # [N] int64 class index, or float64 score


def encode_split(split: GlueSplit, tokenizer: TextTokenizer, max_length: int) -> GlueEncoded:
    """Tokenise a split (pairs truncated "longest first" to ``max_length`` tokens)."""
    ids = tokenizer.encode_batch(split.text_a, split.text_b, max_length=max_length)
    return GlueEncoded(ids, split.labels)


class GlueSeedResult(NamedTuple):
    seed: int
    best_epoch: int  # 1-based epoch whose weights (and dev scores) were kept
    scores: dict[str, dict[str, float]]  # eval set -> metric -> value (fraction), best epoch
    history: list[EpochRecord]  # valid_score: headline metric on the first eval set
    seconds: float


class GlueReport(NamedTuple):
    task: str  # registry key
    model: str  # checkpoint directory
    n_train: int  # training rows used (after --max-train)
    n_eval: dict[str, int]  # rows per eval set
    settings: dict  # FinetuneSettings as a dict
    seeds: list[GlueSeedResult]
    median: dict[str, dict[str, float]]  # eval set -> metric -> median over seeds


def _loss(outputs: torch.Tensor, labels: torch.Tensor, task: GlueTask) -> torch.Tensor:
    if task.is_regression:
        return F.mse_loss(outputs[:, 0], labels)
    return F.cross_entropy(outputs, labels)


def _score(net: MoleculeModel, data: GlueEncoded, task: GlueTask, batch_size: int
           ) -> tuple[float, dict[str, float]]:
    """(dev loss, the task's metrics) of the current weights."""
    outputs = net.run(data.ids, PREDICT, batch_size)  # [N, n_out]
    labels = torch.as_tensor(data.labels, dtype=torch.float32 if task.is_regression
                             else torch.long)
    loss = float(_loss(torch.from_numpy(outputs), labels, task))
    predictions = outputs[:, 0] if task.is_regression else outputs.argmax(1)
    return loss, glue_metrics(task, data.labels, predictions)


def finetune_glue(
    net: MoleculeModel,
    task: str | GlueTask,
    train: GlueEncoded,
    evals: dict[str, GlueEncoded],
    settings: FinetuneSettings,
    seed: int = 0,
    progress: bool = False,
) -> GlueSeedResult:
    """Fine-tune ``net`` in place on ``train``; keep the best epoch on the first eval set.

    Parameters
    ----------
    net : MoleculeModel
        On the device to train on, with ``task.n_out`` outputs; it reads the id rows of
        :func:`encode_split` (a split is tokenised once, not once per epoch).
    task : str or GlueTask
    train : GlueEncoded
    evals : dict
        Eval set name -> encoded rows; the first one selects the epoch.
    settings : FinetuneSettings
    seed : int
        Seeds the order of the training rows. Dropout draws from torch's global
        generator: seed it around this call (``run_glue`` does).
    progress : bool
        A tqdm bar over epochs.
    """
    task = get_task(task) if isinstance(task, str) else task
    if net.n_out != task.n_out:
        raise ValueError(f"{task.display} needs {task.n_out} output(s), the net has {net.n_out}")
    if not len(train.ids):
        raise ValueError(f"no {task.display} training rows")
    if settings.epochs < 1:
        raise ValueError(f"fine-tuning needs at least one epoch, got {settings.epochs}")
    if not evals or any(not len(e.ids) for e in evals.values()):
        raise ValueError(f"{task.display} needs at least one non-empty eval set")
    started = time.monotonic()
    device = net.device
    labels = torch.as_tensor(train.labels, dtype=torch.float32 if task.is_regression
                             else torch.long)
    n, bs = len(train.ids), settings.batch_size
    total_steps = settings.epochs * math.ceil(n / bs)
    optimizer, scheduler = make_optimizer(net, settings, total_steps, TEXT_ADAM_BETAS)
    first = next(iter(evals))
    order_rng = np.random.default_rng(seed)
    train_lengths = np.array([len(x) for x in train.ids])  # [n]
    epoch_scores: list[dict[str, dict[str, float]]] = []  # per epoch: eval set -> metrics

    def step(idx: np.ndarray) -> Step:
        outputs = net(*net.encode([train.ids[i] for i in idx]).to(device)[:4])  # [B, n_out]
        loss = _loss(outputs, labels[idx].to(device), task)
        return Step(loss, optimizer_step(net, optimizer, scheduler, loss, settings.clip_norm))

    def validate() -> tuple[float, float]:
        scores, valid_loss = {}, float("nan")
        for name, data in evals.items():
            loss_value, scores[name] = _score(net, data, task, 2 * bs)
            if name == first:
                valid_loss = loss_value
        epoch_scores.append(scores)
        return valid_loss, scores[first][task.main_metric]

    loop = LoopSettings(settings.epochs, progress=f"{task.display} seed {seed}" if progress
                        else None, name=f"{task.display} seed {seed}")
    # a NaN headline (e.g. constant STS-B predictions) never wins; the last epoch is the
    # fall-back when no epoch has a defined score (keep_last)
    run = run_epochs(net, loop, lambda epoch: bucketed_batches(train_lengths, bs, order_rng),
                     step, validate, _higher_finite, keep_last=True)
    return GlueSeedResult(seed, run.best_epoch, epoch_scores[run.best_epoch - 1], run.history,
                          time.monotonic() - started)


def _higher_finite(score: float, best: float) -> bool:
    return math.isfinite(score) and (math.isnan(best) or score > best)


def _checkpoint_dir(path: str | Path) -> Path:
    """A checkpoint directory, or the run directory holding ``checkpoint/``."""
    path = Path(path)
    if (path / "config.json").is_file():
        return path
    if (path / "checkpoint" / "config.json").is_file():
        return path / "checkpoint"
    raise FileNotFoundError(f"{path} is neither a checkpoint directory (config.json, "
                            "model.safetensors, vocab.txt, tokenizer.json) nor a run "
                            "directory holding checkpoint/")


def load_text_checkpoint(
    path: str | Path, dropout: float | None = None
) -> tuple[ExLMConfig, TextTokenizer, dict[str, torch.Tensor], Path]:
    """``(config, tokenizer, encoder_state, directory)`` of a text checkpoint.

    ``dropout`` replaces the encoder dropout of the saved config. The tokenizer is the
    checkpoint's ``tokenizer.json`` (or the run directory's); its tokens must equal the
    checkpoint's ``vocab.txt``.
    """
    from exlm_chem.model.checkpoint import load_checkpoint
    from exlm_chem.model.checkpoint_format import VOCAB_FILE

    directory = _checkpoint_dir(path)
    candidates = [directory / TOKENIZER_FILE, directory.parent / TOKENIZER_FILE]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"{directory} has no {TOKENIZER_FILE}: is it a text "
                                "checkpoint (exlm-chem text pretrain)?")
    tokenizer = TextTokenizer.from_file(found)
    vocab = (directory / VOCAB_FILE).read_text(encoding="utf-8").splitlines()
    if vocab != tokenizer.tokens:
        raise ValueError(f"{found} does not match {directory / VOCAB_FILE}: the checkpoint "
                         "was trained with another tokenizer")
    model, config, _ = load_checkpoint(directory)
    if dropout is not None:
        config = dataclasses.replace(config, dropout=dropout)
    return config, tokenizer, model.encoder.state_dict(), directory


def run_glue(
    task: str,
    data_dir: str | Path,
    model: str | Path,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    settings: FinetuneSettings | None = None,
    max_train: int | None = None,
    max_length: int = 256,
    device: str = "auto",
    on_bad_rows: str = "error",
    progress: bool = False,
) -> GlueReport:
    """Fine-tune a text checkpoint on one GLUE task once per seed; medians over seeds.

    Parameters
    ----------
    task : str
        "rte", "mrpc", "sts-b", "cola", "sst-2", "qnli", "qqp" or "mnli".
    data_dir : path
        Folder of the GLUE download (``data_dir/RTE/train.tsv``, ...).
    model : path
        Checkpoint (or run) directory written by ``exlm-chem text pretrain``.
    seeds : sequence of int
        One fine-tuning run each (head initialisation, dropout, batch order).
    settings : FinetuneSettings, optional
        Default: :func:`glue_settings`.
    max_train : int, optional
        Use a random subset of this many training rows (the same for every seed).
    max_length : int
        Word pieces per example, special tokens included.
    device : str
        "auto", "cpu", "cuda", ...
    on_bad_rows : {"error", "skip"}
        See :func:`~exlm_chem.text.glue.read_glue_tsv`.
    """
    from exlm_chem.device import resolve_device
    from exlm_chem.model.molecule_model import build_model

    task_ = get_task(task)
    settings = settings or glue_settings(task_)
    if not seeds:
        raise ValueError("give at least one seed")
    train_split = read_glue_split(data_dir, task_, "train", on_bad_rows)
    eval_splits = {name: read_glue_split(data_dir, task_, name, on_bad_rows)
                   for name, _ in task_.eval_sets}
    if max_train is not None and max_train < train_split.n_examples:
        keep = np.sort(np.random.default_rng(0).choice(train_split.n_examples, max_train,
                                                       replace=False))
        train_split = train_split.subset(keep)
    config, tokenizer, encoder_state, directory = load_text_checkpoint(model, settings.dropout)
    train = encode_split(train_split, tokenizer, max_length)
    evals = {name: encode_split(s, tokenizer, max_length) for name, s in eval_splits.items()}
    dev = resolve_device(device)
    results = []
    for seed in seeds:
        devices = [dev.index or 0] if dev.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):  # seeded without touching the caller's RNG
            torch.manual_seed(seed)
            net = build_model(config, tokenizer, task_.n_out, encoder_state,
                              settings.pooler_dropout, "bos", max_length).to(dev)
            result = finetune_glue(net, task_, train, evals, settings, seed, progress)
        logger.info("%s seed %d: %s (epoch %d)", task_.display, seed, result.scores,
                    result.best_epoch)
        results.append(result)
    median = {name: {m: float(np.median([r.scores[name][m] for r in results]))
                     for m in task_.metrics} for name in evals}
    return GlueReport(task_.name, str(directory), len(train.ids),
                      {name: len(e.ids) for name, e in evals.items()},
                      dataclasses.asdict(settings), results, median)


def format_glue_report(report: GlueReport) -> str:
    """A Markdown table: one row per seed and the median row; values x100 as in GLUE."""
    task = get_task(report.task)
    columns = [(name, m) for name in report.median for m in task.metrics]

    def label(name: str, metric: str) -> str:
        return metric if len(report.median) == 1 else f"{name} {metric}"

    def cells(scores: dict[str, dict[str, float]]) -> list[str]:
        return [f"{100 * scores[n][m]:.2f}" for n, m in columns]

    evals = ", ".join(f"{n} ({k} rows)" for n, k in report.n_eval.items())
    lines = [
        f"{task.display}: fine-tuned on {report.n_train} train rows, scored on {evals}; "
        f"{len(report.seeds)} seed(s); metrics x100",
        "| seed | " + " | ".join(label(n, m) for n, m in columns) + " | best epoch |",
        "|---" * (len(columns) + 2) + "|",
    ]
    for r in report.seeds:
        lines.append(f"| {r.seed} | " + " | ".join(cells(r.scores)) + f" | {r.best_epoch} |")
    lines.append("| median | " + " | ".join(cells(report.median)) + " | |")
    return "\n".join(lines)
