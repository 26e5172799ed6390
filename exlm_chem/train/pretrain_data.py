"""Pre-training input: the corpus, and batches built in DataLoader workers.

Batch ``(epoch, position)`` of the token-budget stream is masked with a generator seeded
by ``(seed, epoch, position)``, so a batch does not depend on which process builds it:
with W workers, worker w builds the batches w, w + W, ... of the stream, and the
DataLoader hands them back in stream order. Masking, states expansion and the 2D RoPE
coordinates all happen there (vectorised, :mod:`exlm_chem.data.collate_flat`); the training
process only copies finished (pinned) tensors to the device.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.collate import SpecialIds, collate_exlm, collate_mlm, mask_tokens
from exlm_chem.data.collate_flat import collate_exlm_flat, collate_mlm_flat, mask_flat
from exlm_chem.data.corpus import TokenizedCorpus, read_smiles_file
from exlm_chem.files.checksums import file_sha256
from exlm_chem.files.safe_write import write_text_atomic

logger = logging.getLogger(__name__)


class StepBatch(NamedTuple):
    epoch: int
    position: int  # of the batch in its epoch
    n_tokens: int  # unexpanded tokens of the whole batch (all ranks)
    batch: Any  # ExLMBatch | MLMBatch of this rank, CPU tensors
    targets: torch.Tensor | None = None  # [B, D] standardised descriptors of this rank's rows


class BatchMaker:
    """Index batch + generator -> model batch (CPU tensors). Picklable for workers."""

    def __init__(self, corpus: TokenizedCorpus, special: SpecialIds, args: Any, k_states: int,
                 tokenizer: Any = None, descriptors: np.ndarray | None = None) -> None:
        self.corpus, self.special, self.k_states = corpus, special, k_states
        self.descriptors = descriptors  # [n, D] aligned with the corpus, or None
        self.objective, self.ratio = args.objective, args.mask_ratio
        self.masking, self.repeat_k = args.masking, args.repeat_k
        self.tokenizer = tokenizer  # only fragment masking needs it (with RDKit)

    def __call__(self, indices: np.ndarray, rng: np.random.Generator):
        if self.repeat_k > 1:  # Repeated MLM: per-copy Bernoulli masking
            from exlm_chem.data.repeated_mlm import repeated_mlm_collate

            rows = [self.corpus.get(int(i)) for i in indices]
            return repeated_mlm_collate(rows, self.repeat_k, self.ratio, rng, self.special,
                                        self.objective, self.k_states).batch
        if self.masking == "fragment":
            return self._fragment_batch(indices, rng)
        ids, lengths = self.corpus.tokens(indices)
        flat = mask_flat(ids, lengths, self.ratio, rng, self.special)
        if self.objective == "exlm":
            return collate_exlm_flat(flat, self.k_states, self.special)
        return collate_mlm_flat(flat, self.special)

    def targets(self, indices: np.ndarray) -> torch.Tensor | None:
        """Descriptor targets [len(indices), D] of the molecules of a batch, if any."""
        if self.descriptors is None:
            return None
        return torch.from_numpy(self.descriptors[np.asarray(indices, dtype=np.int64)])

    def _fragment_batch(self, indices: np.ndarray, rng: np.random.Generator):
        from exlm_chem.data.fragments import fragment_token_groups

        samples = []
        for i in indices:
            ids = self.corpus.get(int(i))
            groups = fragment_token_groups(self.corpus.smiles[int(i)], self.tokenizer, len(ids))
            samples.append(mask_tokens(ids, self.ratio, rng, self.special, groups))
        if self.objective == "exlm":
            return collate_exlm(samples, self.k_states, self.special)
        return collate_mlm(samples, self.special)


class PretrainBatches(torch.utils.data.IterableDataset):
    """The endless stream of training batches from ``(epoch, position)`` on."""

    def __init__(self, stream: BatchStream, maker: BatchMaker, seed: int, epoch: int,
                 position: int, rank: int = 0, world: int = 1) -> None:
        super().__init__()
        self.stream, self.maker, self.seed = stream, maker, seed
        self.epoch, self.position, self.rank, self.world = epoch, position, rank, world

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, n_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        batches = self.stream.iterate(self.epoch, self.position)
        for j, (epoch, position, indices) in enumerate(batches):
            if j % n_workers != worker:
                continue
            rng = np.random.default_rng([self.seed, epoch, position])
            n_tokens = int(self.stream.lengths[indices].sum())
            mine = indices[self.rank :: self.world]
            yield StepBatch(epoch, position, n_tokens, self.maker(mine, rng),
                            self.maker.targets(mine))


def _worker_init(_: int) -> None:
    torch.set_num_threads(1)  # NumPy does the work; torch threads would only contend


def make_loader(dataset: PretrainBatches, num_workers: int, pin_memory: bool):
    """A DataLoader over ``dataset`` that yields :class:`StepBatch` records in stream order."""
    extra = {"prefetch_factor": 4, "worker_init_fn": _worker_init} if num_workers > 0 else {}
    # Its own generator: a DataLoader otherwise draws its workers' base seed from the
    # global torch RNG, which dropout uses and checkpoints save, and resuming would differ.
    # The batches need no torch randomness (masks come from their own NumPy generators).
    return torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=num_workers,
                                       pin_memory=pin_memory,
                                       generator=torch.Generator().manual_seed(0), **extra)


def to_device(batch: Any, device: torch.device) -> Any:
    return type(batch)(*(t.to(device, non_blocking=True) for t in batch))


# ----- corpus from SMILES files (the path that needs RDKit for hygiene) ---------------------
def read_corpus_files(args: Any, rank: int) -> tuple[list[str], dict, dict]:
    """SMILES of ``args.corpus`` after hygiene; their checksums; the hygiene summary."""
    smiles: list[str] = []
    checksums = {}
    for path in args.corpus:
        smiles.extend(read_smiles_file(path, limit=args.corpus_limit))
        checksums[str(path)] = file_sha256(path)
    summary: dict[str, Any] = {"enabled": args.hygiene, "lines": len(smiles)}
    if args.hygiene:
        smiles = _apply_hygiene(smiles, checksums, args.corpus_limit, summary, rank)
    return smiles, checksums, summary


def _apply_hygiene(smiles: list[str], checksums: dict, limit: int | None, summary: dict,
                   rank: int) -> list[str]:
    """Drop benchmark valid/test molecules; the result is cached per corpus checksum."""
    from exlm_chem.data.hygiene import benchmark_heldout_molecules, exclude_molecules
    from exlm_chem.data.moleculenet import default_cache_dir

    # version 2: held-out molecules of every split mode the runner offers, not only scaffold
    key = {"corpus": checksums, "limit": limit, "version": 2}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    cache = default_cache_dir().parent / "hygiene" / f"{digest}.json"
    if cache.exists():
        saved = json.loads(cache.read_text())
        removed = set(saved["removed_lines"])
        summary.update(saved["summary"])
        logger.info("corpus hygiene (cached in %s): %s", cache, saved["summary"])
        return [s for i, s in enumerate(smiles) if i not in removed]
    heldout = benchmark_heldout_molecules(n_jobs=-1)
    report = exclude_molecules(smiles, heldout, n_jobs=-1)
    summary.update(
        removed=report.n_removed,
        canonicalised=report.n_candidates,
        heldout_molecules={k: len(v) for k, v in heldout.items()},
        removed_by_task=report.removed_by_task,
    )
    if rank == 0:
        cache.parent.mkdir(parents=True, exist_ok=True)
        payload = {"key": key, "summary": summary,
                   "removed_lines": np.flatnonzero(~report.keep).tolist()}
        write_text_atomic(cache, json.dumps(payload))
    return [s for s, keep in zip(smiles, report.keep, strict=True) if keep]


def prepared_summary(manifest: dict, directory: str | Path) -> tuple[dict, dict]:
    """Checksums and hygiene summary of a prepared corpus, shaped like the files path's."""
    checksums = {s["path"]: s["sha256"] for s in manifest["sources"]}
    checksums[f"{directory}/train.npz"] = manifest["files"]["train.npz"]
    hygiene = {**manifest["hygiene"], "lines": manifest["counts"]["lines"],
               "prepared": str(directory)}
    return checksums, hygiene


__all__ = ["BatchMaker", "PretrainBatches", "StepBatch", "make_loader", "prepared_summary",
           "read_corpus_files", "to_device"]
