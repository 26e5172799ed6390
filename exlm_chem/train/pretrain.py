"""Pre-training loop for ExLM and its plain-MLM twin.

Both objectives read the same molecules in the same order with the same masks: batch
``(epoch, position)`` of the token-budget stream is masked with a generator seeded by
``(seed, epoch, position)``. That, the step-determined learning rate and the saved
optimizer/RNG state make a resumed run continue exactly where it stopped.

Here: the model with its objective as one module, the run's data, model and optimizer
(:class:`Pretrainer`) and its step loop. Batches are built in DataLoader workers
(:mod:`exlm_chem.train.pretrain_data`), checkpoints and snapshots written and resumed by
:mod:`exlm_chem.train.pretrain_checkpoint`, the held-out slice scored by
:mod:`exlm_chem.train.pretrain_validation`. A training step never waits for the device (no
``.item()``, no branch on device values): loss, invalid paths and the gradient norm stay
on the device and are read at logging time only. On CUDA: bf16 autocast, TF32 matmuls,
fused AdamW and optionally ``torch.compile``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path

import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.collate import MLMBatch, SpecialIds
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.device import resolve_device
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.presets import model_preset
from exlm_chem.train.objectives import (
    descriptor_loss,
    encode,
    equivalence_loss,
    exlm_loss,
    mlm_loss,
    translation_loss,
)
from exlm_chem.train.pretrain_args import PretrainArgs, check_args, learning_rate
from exlm_chem.train.pretrain_checkpoint import (
    can_resume,
    resume_run,
    save_run,
    save_snapshot,
    start_from,
)
from exlm_chem.train.pretrain_data import (
    BatchMaker,
    PretrainBatches,
    StepBatch,
    make_loader,
    prepare_run_corpus,
    prepared_summary,
    to_device,
)
from exlm_chem.train.pretrain_validation import validate

logger = logging.getLogger(__name__)


class ObjectiveModule(torch.nn.Module):
    """The model plus its objective as one ``forward``, so DDP sees the heads' work too."""

    def __init__(self, model: ExLMModel, objective: str, aux_clip: float | None = None,
                 contrast_temperature: float | None = None) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = exlm_loss if objective == "exlm" else mlm_loss
        self.aux_clip = aux_clip  # of the descriptor targets (PretrainArgs.aux_clip)
        # PretrainArgs.contrast_temperature; None: no SMILES-equivalence loss
        self.contrast_temperature = contrast_temperature

    def forward(self, batch, targets: torch.Tensor | None = None, with_accuracy: bool = False,
                columns: torch.Tensor | None = None, views: MLMBatch | None = None,
                canonical: torch.Tensor | None = None):
        """The objective's output; with descriptor ``targets`` [B, D] also its ``aux_loss``,
        over the ``columns`` [D] (bool) that count this step (None: all); with ``views``
        (unmasked randomised SMILES of the batch's molecules) also its ``contrast_loss``
        (when the module has a temperature) and, with their ``canonical`` ids [B, L], its
        ``translate_loss``."""
        hidden = encode(self.model, batch)  # [B, X, d], shared by every loss
        out = self.loss_fn(self.model, batch, with_accuracy, hidden=hidden)
        if targets is not None:
            out = out._replace(aux_loss=descriptor_loss(self.model, hidden, targets,
                                                        clip=self.aux_clip, columns=columns))
        if views is not None:
            view_hidden = encode(self.model, views)  # [B, Y, d], shared by both view losses
            if self.contrast_temperature is not None:
                out = out._replace(contrast_loss=equivalence_loss(
                    hidden, batch.padding_mask, view_hidden, views.padding_mask,
                    self.contrast_temperature))
            if canonical is not None:
                out = out._replace(translate_loss=translation_loss(
                    self.model, view_hidden, views.padding_mask, canonical,
                    self.model.config.pad_id))
        return out


class Pretrainer:
    """Owns the data, model, optimizer and the step loop of one run."""

    def __init__(self, args: PretrainArgs, tokenizer: SmilesTokenizer | None = None) -> None:
        self.args = check_args(args)
        self.out = Path(self.args.out)
        self.tokenizer = tokenizer or SmilesTokenizer()
        tok = self.tokenizer
        self.special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.device = resolve_device(self.args.device)
        if self.world > 1 and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        self.budget: dict | None = None
        self.lineage: list[dict] = []
        self.descriptors: dict | None = None  # "train"/"valid" -> [n, D] targets (aux_weight)
        self.descriptor_info: dict | None = None  # kind, RDKit version, scaler (manifest's)
        self.corpus_counts: dict | None = None  # the prepared corpus's lines, removals, kept

    # ----- data -------------------------------------------------------------------
    def load_data(self) -> None:
        """Read the prepared corpus: ``args.prepared``, or ``args.corpus`` prepared into
        ``OUT/corpus`` first (:func:`~exlm_chem.train.pretrain_data.prepare_run_corpus`);
        from there on both read alike."""
        from exlm_chem.data.corpus_prepare import load_prepared

        args = self.args
        directory = args.prepared if args.prepared is not None else prepare_run_corpus(
            args, self.rank)
        prepared = load_prepared(directory, self.tokenizer.tokens)
        self.train, self.valid = prepared.train, prepared.valid
        self.corpus_checksums, self.hygiene_summary = prepared_summary(prepared.manifest,
                                                                       directory)
        self.corpus_counts = prepared.manifest["counts"]
        self.n_unknown_tokens = prepared.manifest["counts"]["unknown_tokens"]
        if args.aux_weight > 0:
            if prepared.descriptors is None:
                raise ValueError(f"{directory} holds no descriptors, which aux_weight "
                                 "needs: prepare it with --descriptors rdkit2d (or add them "
                                 "with `exlm-chem corpus descriptors`)")
            self.descriptors = prepared.descriptors
            self.descriptor_info = prepared.manifest["descriptors"]
            stored_clip = self.descriptor_info["scaler"]["clip"]
            if args.aux_clip is not None and args.aux_clip >= stored_clip and self.rank == 0:
                logger.warning("aux_clip %g changes nothing: %s stores its targets clipped "
                               "at %g already", args.aux_clip, directory, stored_clip)
        self.stream = BatchStream(self.train.lengths(), args.max_tokens, args.seed)
        if self.rank == 0:
            logger.info("corpus: %d train / %d valid molecules", len(self.train), len(self.valid))

    def batches(self, progress: dict) -> PretrainBatches:
        """The training stream from the saved position on."""
        maker = BatchMaker(self.train, self.special, self.args, self.config.k_states,
                           self.tokenizer, self.split_targets("train"))
        return PretrainBatches(self.stream, maker, self.args.seed, progress["epoch"],
                               progress["position"], self.rank, self.world, progress["step"])

    def split_targets(self, split: str):
        """The descriptor targets [n, D] of ``split`` ("train" or "valid"); None without
        the auxiliary objective."""
        return None if self.descriptors is None else self.descriptors[split]

    def loader(self, progress: dict):
        pin = self.device.type == "cuda"
        return iter(make_loader(self.batches(progress), self.args.num_workers, pin))

    # ----- model ------------------------------------------------------------------
    def build_model(self) -> None:
        args = self.args
        overrides = {"objective": args.objective}
        if args.k_states is not None:
            overrides["k_states"] = args.k_states
        if args.d_model is not None:
            overrides.update(d_model=args.d_model, n_heads=args.d_model // 64,
                             d_ffn=4 * args.d_model)
        if args.dropout is not None:
            overrides.update(dropout=args.dropout, attention_dropout=args.dropout)
        if self.descriptors is not None:
            overrides["n_descriptors"] = self.descriptors["train"].shape[1]
        if args.translate_weight > 0:
            overrides["smiles_decoder"] = True
        self.config = ExLMConfig.preset(model_preset(args.preset), vocab_size=len(self.tokenizer),
                                        **overrides)
        torch.manual_seed(args.seed)
        self.model = ExLMModel(self.config).to(self.device)
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        if args.compile:  # in place: parameter names (and checkpoints) stay the same
            self.model.encoder.compile(dynamic=True)
        self.objective = ObjectiveModule(
            self.model, args.objective, args.aux_clip,
            args.contrast_temperature if args.contrast_weight > 0 else None)
        self.train_step_module = self.objective
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.train_step_module = DistributedDataParallel(self.objective, device_ids=ids)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=args.lr,
            betas=tuple(args.betas),
            eps=1e-6,
            weight_decay=args.weight_decay,
            fused=True,  # one kernel over all parameters, on CUDA and on the CPU
        )
        self.autocast = torch.autocast("cuda", dtype=torch.bfloat16,
                                       enabled=self.device.type == "cuda")

    def train_step(self, batch, step: int, targets: torch.Tensor | None = None,
                   columns: torch.Tensor | None = None, views: MLMBatch | None = None,
                   canonical: torch.Tensor | None = None):
        """One optimizer step; returns the objective's output and the gradient norm, both
        left on the device. ``targets``: the batch's descriptors (auxiliary objective);
        ``columns``: those of its columns the step counts (``aux_share``; None: all);
        ``views``: randomised SMILES of its molecules (SMILES-equivalence and translation
        losses); ``canonical``: their canonical ids (translation loss)."""
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(step, self.args)
        with self.autocast:
            out = self.train_step_module(batch, targets, columns=columns, views=views,
                                         canonical=canonical)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.args.token_weight * out.loss
        if out.aux_loss is not None:
            loss = loss + self.args.aux_weight * out.aux_loss
        if out.contrast_loss is not None:
            loss = loss + self.args.contrast_weight * out.contrast_loss
        if out.translate_loss is not None:
            loss = loss + self.args.translate_weight * out.translate_loss
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip_norm)
        self.optimizer.step()
        return out, grad_norm

    def train_item(self, item: StepBatch, step: int):
        """:meth:`train_step` on a batch of the stream, its descriptor targets, columns,
        SMILES views and canonical ids included (the pace probe times the same step the
        run takes)."""
        # non_blocking, as to_device: a plain copy to a GPU waits for its queued work
        targets, columns, canonical = (None if t is None else t.to(self.device, non_blocking=True)
                                       for t in (item.targets, item.columns, item.canonical))
        views = None if item.views is None else to_device(item.views, self.device)
        return self.train_step(to_device(item.batch, self.device), step, targets, columns,
                               views, canonical)

    # ----- checkpoints (written by exlm_chem.train.pretrain_checkpoint) -----------
    def checkpoint_files(self, directory: Path) -> None:
        """Extra files for the checkpoint or snapshot being assembled in ``directory`` (the
        text path adds its tokenizer)."""

    # ----- loop -------------------------------------------------------------------
    def _fresh_progress(self) -> dict:
        return {"step": 0, "epoch": 0, "position": 0, "tokens_seen": 0, "invalid_paths": 0,
                "wall_seconds": 0.0, "cpu_seconds": 0.0}

    def run(self, resume: bool = False) -> dict:
        run_start = time.monotonic()
        self.load_data()
        self.build_model()
        progress = self._fresh_progress()
        if resume and can_resume(self.out):
            progress, self.lineage = resume_run(self)
        elif self.args.init_from is not None:
            progress, self.lineage = start_from(self, Path(self.args.init_from), progress)
        if self.args.budget_minutes is not None or self.args.budget_from:
            from exlm_chem.train.budget import decide_budget

            self.budget = decide_budget(self, progress, run_start, resume)
            self.args = dataclasses.replace(self.args, **self.budget["applied"])
        self.model.train()
        return self._loop(progress)

    def _loop(self, progress: dict) -> dict:
        args = self.args
        started = time.monotonic() - progress["wall_seconds"]
        # process CPU time (all threads), carried over a resume: the study's equal budget
        started_cpu = time.process_time() - progress.get("cpu_seconds", 0.0)
        # snapshots fall at multiples of the interval (a resumed run goes on counting)
        interval = 60 * (args.snapshot_cpu_minutes or 0.0)
        next_snapshot = int(progress.get("cpu_seconds", 0.0) // interval) + 1 if interval else 0
        batches = self.loader(progress)
        from tqdm.auto import tqdm

        bar = tqdm(total=args.max_steps, initial=progress["step"],
                   desc=f"pretrain {args.objective}", disable=not args.progress or self.rank != 0)
        log = open(self.out / "log.jsonl", "a") if self.rank == 0 else None
        if log is not None and self.budget is not None:
            log.write(json.dumps({"budget": self.budget}) + "\n")
        # counters stay on the device; they are read when a record is logged or saved
        invalid = torch.tensor(progress["invalid_paths"], device=self.device)
        loss_sum = torch.zeros((), device=self.device)
        aux_sum = torch.zeros((), device=self.device)
        contrast_sum = torch.zeros((), device=self.device)
        translate_sum = torch.zeros((), device=self.device)
        window_tokens, window_steps, window_start = 0, 0, time.monotonic()
        while progress["step"] < args.max_steps:
            item = next(batches)
            out, grad_norm = self.train_item(item, progress["step"])
            loss_sum += out.loss.detach()
            if out.aux_loss is not None:
                aux_sum += out.aux_loss.detach()
            if out.contrast_loss is not None:
                contrast_sum += out.contrast_loss.detach()
            if out.translate_loss is not None:
                translate_sum += out.translate_loss.detach()
            invalid += out.n_invalid
            progress.update(step=progress["step"] + 1, epoch=item.epoch,
                            position=item.position + 1)
            progress["tokens_seen"] += item.n_tokens
            progress["wall_seconds"] = time.monotonic() - started
            progress["cpu_seconds"] = time.process_time() - started_cpu
            window_tokens += item.n_tokens
            window_steps += 1
            step = progress["step"]
            logging_now = step % args.log_every == 0 or step == args.max_steps
            timed_out = (
                (args.max_minutes is not None and progress["wall_seconds"] > 60 * args.max_minutes)
                or (args.max_cpu_minutes is not None
                    and progress["cpu_seconds"] > 60 * args.max_cpu_minutes)
                or step == args.stop_at_step
            )
            validating = step % args.valid_every == 0 or step == args.max_steps or timed_out
            saving = step % args.checkpoint_every == 0 or step == args.max_steps or timed_out
            if logging_now or saving:
                progress["invalid_paths"] = int(invalid)
            if log is not None and logging_now:
                rate = window_tokens / max(1e-9, time.monotonic() - window_start)
                record = {
                    "step": step,
                    "loss": float(loss_sum) / window_steps,  # mean over the steps since the last
                    "lr": learning_rate(step - 1, args),
                    "grad_norm": float(grad_norm),
                    "tokens_per_s": rate,
                    "invalid_paths": progress["invalid_paths"],
                    "epoch": item.epoch,
                    "tokens_seen": progress["tokens_seen"],
                    "cpu_seconds": round(progress["cpu_seconds"], 1),
                }
                if item.targets is not None:
                    record["aux_loss"] = float(aux_sum) / window_steps
                if out.contrast_loss is not None:
                    record["contrast_loss"] = float(contrast_sum) / window_steps
                if out.translate_loss is not None:
                    record["translate_loss"] = float(translate_sum) / window_steps
                log.write(json.dumps(record) + "\n")
                log.flush()
                bar.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{rate:.0f}",
                                invalid=progress["invalid_paths"])
            if logging_now:
                loss_sum.zero_()
                aux_sum.zero_()
                contrast_sum.zero_()
                translate_sum.zero_()
                window_tokens, window_steps, window_start = 0, 0, time.monotonic()
            bar.update(1)
            if validating:
                progress["last_validation"] = {"step": step, **validate(self)}
                if log is not None:
                    log.write(json.dumps(progress["last_validation"]) + "\n")
                    log.flush()
            if saving:
                save_run(self, progress)
            if interval and progress["cpu_seconds"] >= interval * next_snapshot:
                save_snapshot(self, progress)
                next_snapshot += 1
            elif args.snapshot_every and step % args.snapshot_every == 0:
                save_snapshot(self, progress)
            if timed_out:
                logger.info("pausing at step %d (time budget or --stop-at-step)", step)
                break
        bar.close()
        if log is not None:
            log.close()
        return progress


def setup_distributed() -> None:
    """Initialise torch.distributed when launched by torchrun (WORLD_SIZE > 1)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)


def pretrain(args: PretrainArgs, resume: bool = False) -> dict:
    """Run (or resume) a pre-training run; returns the final progress record."""
    setup_distributed()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    trainer = Pretrainer(args)
    result = trainer.run(resume=resume)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    return result


__all__ = ["Pretrainer", "pretrain"]
