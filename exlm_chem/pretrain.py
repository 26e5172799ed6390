"""Pre-training loop for ExLM and its plain-MLM twin.

Both objectives read the same molecules in the same order with the same masks: batch
``(epoch, position)`` of the token-budget stream is masked with a generator seeded by
``(seed, epoch, position)``. That, the step-determined learning rate and the saved
optimizer/RNG state make a resumed run continue exactly where it stopped.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from exlm_chem.collate import SpecialIds, collate_exlm, collate_mlm, mask_tokens
from exlm_chem.corpus import (
    BatchStream,
    TokenizedCorpus,
    file_sha256,
    read_smiles_file,
    split_validation,
    tokenize_corpus,
)
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.model.checkpoint import atomic_directory, save_checkpoint
from exlm_chem.objectives import exlm_loss, mlm_loss
from exlm_chem.tokenizer import SmilesTokenizer
from exlm_chem.training_state import read_training_state, write_training_state

logger = logging.getLogger(__name__)


@dataclass
class PretrainArgs:
    corpus: list[str]  # SMILES files, one molecule per line (.gz ok)
    out: str  # run directory: checkpoint/, log.jsonl, hygiene.json
    preset: str = "small"  # model preset (tiny | small | base)
    objective: str = "exlm"  # exlm (states alignment) | mlm (the SMILES-BERT twin)
    k_states: int | None = None  # override the preset's expanded states per BOS/[MASK]/EOS
    max_steps: int = 1000  # optimizer steps in the whole run (the schedule spans these)
    max_tokens: int = 8192  # padded, unexpanded tokens per batch (all ranks together)
    lr: float = 5e-4  # peak learning rate
    warmup_steps: int = 100  # linear warm-up, then polynomial (power 1) decay to end_lr
    end_lr: float = 0.0
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.0
    clip_norm: float = 1.0
    mask_ratio: float = 0.15
    masking: str = "token"  # token | fragment (whole BRICS fragments)
    repeat_k: int = (
        1  # Repeated MLM (paper sec. 3): each token k times, each copy masked w.p. mask_ratio
    )
    max_length: int = 256  # tokens per molecule incl. BOS/EOS; longer ones are truncated
    corpus_limit: int | None = None  # read only the first N lines of each corpus file
    valid_size: int = 2000  # held-out molecules for validation loss/accuracy
    valid_every: int = 500
    checkpoint_every: int = 500
    log_every: int = 10
    seed: int = 0
    hygiene: bool = True  # drop benchmark valid/test molecules from the corpus
    max_minutes: float | None = None  # stop (with a checkpoint) after this wall time
    stop_at_step: int | None = None  # pause (with a checkpoint) here; --resume continues
    device: str = "auto"
    progress: bool = True
    extra: dict = field(default_factory=dict)  # free-form notes saved in metadata


def learning_rate(step: int, args: PretrainArgs) -> float:
    """Linear warm-up to ``lr`` then linear decay to ``end_lr`` at ``max_steps``."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    span = max(1, args.max_steps - args.warmup_steps)
    frac = min(1.0, (step - args.warmup_steps) / span)
    return args.end_lr + (args.lr - args.end_lr) * (1.0 - frac)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class ObjectiveModule(torch.nn.Module):
    """The model plus its objective as one ``forward``, so DDP sees the heads' work too."""

    def __init__(self, model: ExLMModel, objective: str) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = exlm_loss if objective == "exlm" else mlm_loss

    def forward(self, batch, with_accuracy: bool = False):
        return self.loss_fn(self.model, batch, with_accuracy)


class Pretrainer:
    """Owns the data, model, optimizer and the step loop of one run."""

    def __init__(self, args: PretrainArgs, tokenizer: SmilesTokenizer | None = None) -> None:
        self.args = args
        self.out = Path(args.out)
        self.tokenizer = tokenizer or SmilesTokenizer()
        tok = self.tokenizer
        self.special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.device = resolve_device(args.device)
        if args.repeat_k < 1 or (args.repeat_k > 1 and args.masking != "token"):
            raise ValueError("--repeat-k must be >= 1, and > 1 only with --masking token")
        if self.world > 1 and self.device.type == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))

    # ----- data -------------------------------------------------------------------
    def load_data(self) -> None:
        args = self.args
        smiles: list[str] = []
        self.corpus_checksums = {}
        for path in args.corpus:
            smiles.extend(read_smiles_file(path, limit=args.corpus_limit))
            self.corpus_checksums[str(path)] = file_sha256(path)
        self.hygiene_summary = {"enabled": args.hygiene, "lines": len(smiles)}
        if args.hygiene:
            smiles = self._apply_hygiene(smiles)
        corpus = tokenize_corpus(smiles, self.tokenizer, max_length=args.max_length)
        n_valid = min(args.valid_size, max(1, len(corpus) // 10))
        train_idx, valid_idx = split_validation(len(corpus), n_valid, args.seed)
        self.train = corpus.subset(train_idx)
        self.valid = corpus.subset(valid_idx)
        self.n_unknown_tokens = corpus.n_unknown_tokens
        self.stream = BatchStream(self.train.lengths(), args.max_tokens, args.seed)
        if self.rank == 0:
            logger.info("corpus: %d train / %d valid molecules", len(self.train), len(self.valid))

    def _apply_hygiene(self, smiles: list[str]) -> list[str]:
        """Drop benchmark valid/test molecules; the result is cached per corpus checksum."""
        import hashlib

        from exlm_chem.hygiene import benchmark_heldout_molecules, exclude_molecules
        from exlm_chem.moleculenet import default_cache_dir

        key = {"corpus": self.corpus_checksums, "limit": self.args.corpus_limit, "version": 1}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
        cache = default_cache_dir().parent / "hygiene" / f"{digest}.json"
        if cache.exists():
            saved = json.loads(cache.read_text())
            removed = set(saved["removed_lines"])
            self.hygiene_summary.update(saved["summary"])
            logger.info("corpus hygiene (cached in %s): %s", cache, saved["summary"])
            return [s for i, s in enumerate(smiles) if i not in removed]
        heldout = benchmark_heldout_molecules(n_jobs=os.cpu_count() or 1)
        report = exclude_molecules(smiles, heldout, n_jobs=os.cpu_count() or 1)
        self.hygiene_summary.update(
            removed=report.n_removed,
            canonicalised=report.n_candidates,
            heldout_molecules={k: len(v) for k, v in heldout.items()},
            removed_by_task=report.removed_by_task,
        )
        if self.rank == 0:
            cache.parent.mkdir(parents=True, exist_ok=True)
            payload = {
                "key": key,
                "summary": self.hygiene_summary,
                "removed_lines": np.flatnonzero(~report.keep).tolist(),
            }
            tmp = cache.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(payload))
            os.replace(tmp, cache)
        return [s for s, keep in zip(smiles, report.keep, strict=True) if keep]

    def make_batch(self, corpus: TokenizedCorpus, indices: np.ndarray, rng: np.random.Generator):
        if self.args.repeat_k > 1:  # Repeated MLM: per-copy Bernoulli masking
            from exlm_chem.analysis.repeated_mlm import repeated_mlm_collate

            rows = [corpus.get(int(i)) for i in indices]
            batch = repeated_mlm_collate(
                rows, self.args.repeat_k, self.args.mask_ratio, rng, self.special,
                self.args.objective, self.config.k_states,
            ).batch  # fmt: skip
            return type(batch)(*(t.to(self.device, non_blocking=True) for t in batch))
        groups = None
        samples = []
        for i in indices:
            ids = corpus.get(int(i))
            if self.args.masking == "fragment":
                from exlm_chem.fragments import fragment_token_groups

                groups = fragment_token_groups(corpus.smiles[int(i)], self.tokenizer, len(ids))
            samples.append(mask_tokens(ids, self.args.mask_ratio, rng, self.special, groups))
        if self.args.objective == "exlm":
            batch = collate_exlm(samples, self.config.k_states, self.special)
        else:
            batch = collate_mlm(samples, self.special)
        return type(batch)(*(t.to(self.device, non_blocking=True) for t in batch))

    # ----- model ------------------------------------------------------------------
    def build_model(self) -> None:
        args = self.args
        overrides = {"objective": args.objective}
        if args.k_states is not None:
            overrides["k_states"] = args.k_states
        self.config = ExLMConfig.preset(args.preset, vocab_size=len(self.tokenizer), **overrides)
        torch.manual_seed(args.seed)
        self.model = ExLMModel(self.config).to(self.device)
        self.objective = ObjectiveModule(self.model, args.objective)
        self.train_step_module = self.objective
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.train_step_module = DistributedDataParallel(self.objective, device_ids=ids)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(),
            lr=args.lr,
            betas=tuple(args.betas),
            eps=1e-6,
            weight_decay=args.weight_decay,
        )

    # ----- checkpoints ------------------------------------------------------------
    def checkpoint_dir(self) -> Path:
        return self.out / "checkpoint"

    def save(self, progress: dict) -> None:
        if self.rank != 0:
            return
        metadata = {
            "objective": self.args.objective,
            "steps": progress["step"],
            "tokens_seen": progress["tokens_seen"],
            "invalid_paths": progress["invalid_paths"],
            "wall_seconds": progress["wall_seconds"],
            "device": torch.cuda.get_device_name(self.device)
            if self.device.type == "cuda"
            else "cpu",
            "corpus_sha256": self.corpus_checksums,
            "hygiene": self.hygiene_summary,
            "pretrain_args": asdict(self.args),
            "last_validation": progress.get("last_validation"),
        }
        with atomic_directory(self.checkpoint_dir()) as tmp:
            save_checkpoint(tmp, self.model, self.config, self.tokenizer.tokens, metadata)
            write_training_state(tmp, self.optimizer, progress)
            self.checkpoint_files(tmp)

    def checkpoint_files(self, directory: Path) -> None:
        """Extra files for the checkpoint being assembled (the text path adds its tokenizer)."""

    # ----- loop -------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> dict:
        """Loss and masked-token accuracy on the held-out slice, with fixed masks."""
        self.model.eval()
        rng = np.random.default_rng([self.args.seed, 10**6])
        batches = BatchStream(self.valid.lengths(), self.args.max_tokens, self.args.seed)
        losses, invalid, predicted, correct, n = 0.0, 0, 0, 0, 0
        for _, _, idx in batches.iterate():
            if n >= len(self.valid):
                break
            out = self.objective(self.make_batch(self.valid, idx, rng), with_accuracy=True)
            losses += float(out.loss) * (out.n_samples - out.n_invalid)
            invalid += out.n_invalid
            predicted += out.n_predicted
            correct += out.n_correct
            n += out.n_samples
        self.model.train()
        return {
            "valid_loss": losses / max(1, n - invalid),
            "valid_accuracy": correct / max(1, predicted),
            "valid_invalid_paths": invalid,
            "valid_molecules": n,
        }

    def run(self, resume: bool = False) -> dict:
        args = self.args
        self.load_data()
        self.build_model()
        progress = {
            "step": 0,
            "epoch": 0,
            "position": 0,
            "tokens_seen": 0,
            "invalid_paths": 0,
            "wall_seconds": 0.0,
        }
        if resume and (self.checkpoint_dir() / "training_state.json").exists():
            from exlm_chem.model.checkpoint import load_checkpoint

            saved, _, _ = load_checkpoint(self.checkpoint_dir(), map_location=self.device)
            self.model.load_state_dict(saved.state_dict())
            progress = read_training_state(self.checkpoint_dir(), self.optimizer)
            logger.info("resumed at step %d", progress["step"])
        self.model.train()
        started = time.monotonic() - progress["wall_seconds"]
        stream = self.stream.iterate(progress["epoch"], progress["position"])
        bar = None
        if args.progress and self.rank == 0:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=args.max_steps, initial=progress["step"], desc=f"pretrain {args.objective}"
            )
        log = open(self.out / "log.jsonl", "a") if self.rank == 0 else None
        autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        window_tokens, window_start = 0, time.monotonic()
        while progress["step"] < args.max_steps:
            epoch, position, indices = next(stream)
            rng = np.random.default_rng([args.seed, epoch, position])
            batch = self.make_batch(self.train, indices[self.rank :: self.world], rng)
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(progress["step"], args)
            with autocast:
                out = self.train_step_module(batch)
            self.optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), args.clip_norm)
            self.optimizer.step()
            n_tokens = int(self.train.lengths()[indices].sum())
            progress.update(step=progress["step"] + 1, epoch=epoch, position=position + 1)
            progress["tokens_seen"] += n_tokens
            progress["invalid_paths"] += out.n_invalid
            progress["wall_seconds"] = time.monotonic() - started
            window_tokens += n_tokens
            step = progress["step"]
            if log is not None and (step % args.log_every == 0 or step == args.max_steps):
                rate = window_tokens / max(1e-9, time.monotonic() - window_start)
                window_tokens, window_start = 0, time.monotonic()
                record = {
                    "step": step,
                    "loss": float(out.loss.detach()),
                    "lr": learning_rate(step - 1, args),
                    "grad_norm": float(grad_norm),
                    "tokens_per_s": rate,
                    "invalid_paths": progress["invalid_paths"],
                    "epoch": epoch,
                }
                log.write(json.dumps(record) + "\n")
                log.flush()
                if bar is not None:
                    bar.set_postfix(
                        loss=f"{record['loss']:.3f}",
                        tok_s=f"{rate:.0f}",
                        invalid=progress["invalid_paths"],
                    )
            if bar is not None:
                bar.update(1)
            timed_out = (
                args.max_minutes is not None and progress["wall_seconds"] > 60 * args.max_minutes
            ) or step == args.stop_at_step
            if step % args.valid_every == 0 or step == args.max_steps or timed_out:
                progress["last_validation"] = {"step": step, **self.validate()}
                if log is not None:
                    log.write(json.dumps(progress["last_validation"]) + "\n")
                    log.flush()
            if step % args.checkpoint_every == 0 or step == args.max_steps or timed_out:
                self.save(progress)
            if timed_out:
                logger.info("pausing at step %d (time budget or --stop-at-step)", step)
                break
        if bar is not None:
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


__all__ = ["PretrainArgs", "Pretrainer", "learning_rate", "pretrain"]
