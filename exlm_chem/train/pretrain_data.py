"""Pre-training input: the corpus, and batches built in DataLoader workers.

The corpus is always a prepared one (:mod:`exlm_chem.data.corpus_prepare`): ``--prepared``
names its folder, and ``--corpus`` files are prepared into ``OUT/corpus`` first
(:func:`prepare_run_corpus`), so the two read the same molecules.

Batch ``(epoch, position)`` of the token-budget stream is masked with a generator seeded
by ``(seed, epoch, position)``, so a batch does not depend on which process builds it:
with W workers, worker w builds the batches w, w + W, ... of the stream, and the
DataLoader hands them back in stream order. Masking, states expansion and the 2D RoPE
coordinates all happen there (vectorised, :mod:`exlm_chem.data.collate_flat`); the training
process only copies finished (pinned) tensors to the device. So does the draw of the
descriptor columns a step's auxiliary loss counts (``aux_share`` < 1,
:func:`descriptor_columns`): seeded by ``(seed, step)``, a resumed run draws what an
uninterrupted one would.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.collate import (
    SpecialIds,
    collate_exlm,
    collate_mlm,
    mask_tokens,
    scatter_padded,
    segments,
)
from exlm_chem.data.collate_flat import MaskedFlat, collate_exlm_flat, collate_mlm_flat, mask_flat
from exlm_chem.data.corpus import TokenizedCorpus
from exlm_chem.train.pretrain_checkpoint import can_resume

logger = logging.getLogger(__name__)


class StepBatch(NamedTuple):
    epoch: int
    position: int  # of the batch in its epoch
    n_tokens: int  # unexpanded tokens of the whole batch (all ranks)
    batch: Any  # ExLMBatch | MLMBatch of this rank, CPU tensors
    targets: torch.Tensor | None = None  # [B, D] standardised descriptors of this rank's rows
    columns: torch.Tensor | None = None  # [D] bool: the targets' columns this step counts
    views: Any = None  # MLMBatch: an unmasked randomised SMILES of each of this rank's rows
    canonical: torch.Tensor | None = None  # [B, L] their canonical token ids, padded


class BatchMaker:
    """Index batch + generator -> model batch (CPU tensors). Picklable for workers."""

    def __init__(self, corpus: TokenizedCorpus, special: SpecialIds, args: Any, k_states: int,
                 tokenizer: Any = None, descriptors: np.ndarray | None = None) -> None:
        self.corpus, self.special, self.k_states = corpus, special, k_states
        self.descriptors = descriptors  # [n, D] aligned with the corpus, or None
        self.objective, self.ratio = args.objective, args.mask_ratio
        self.masking, self.repeat_k = args.masking, args.repeat_k
        self.aux_share = args.aux_share
        # both the SMILES-equivalence and the translation loss read randomised SMILES
        self.randomised = args.contrast_weight > 0 or args.translate_weight > 0
        self.translate = args.translate_weight > 0
        self.max_length = args.max_length
        # fragment masking and the SMILES views need it: ids -> SMILES (RDKit) -> ids
        self.tokenizer = tokenizer

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

    def views(self, indices: np.ndarray, rng: np.random.Generator):
        """An unmasked randomised SMILES of each molecule of a batch, as an
        :class:`~exlm_chem.data.collate.MLMBatch` (rows in ``indices`` order); None without
        the SMILES-equivalence and translation losses. Drawn from ``rng`` after the masks, so
        a batch's views are as reproducible as its masks."""
        if not self.randomised:
            return None
        from exlm_chem.data.augment import randomized_smiles
        from exlm_chem.data.rdkit_reasons import quiet_mol

        ids = []
        for i in indices:
            # a molecule that does not parse back (truncated, [UNK]) is its own second view
            smiles = self.tokenizer.decode(self.corpus.get(int(i)))
            view = randomized_smiles(quiet_mol(smiles), rng, smiles)
            ids.append(self.tokenizer.encode(view, max_length=self.max_length))
        lengths = np.array([len(x) for x in ids], dtype=np.int64)
        flat = np.concatenate(ids).astype(np.int64)
        unmasked = MaskedFlat(flat, flat, np.zeros(flat.size, dtype=bool), lengths)
        return collate_mlm_flat(unmasked, self.special)

    def canonical(self, indices: np.ndarray) -> torch.Tensor | None:
        """The corpus's (canonical) token ids of the molecules of a batch, BOS to EOS,
        padded [len(indices), L]: what the translation loss writes; None without it."""
        if not self.translate:
            return None
        ids, lengths = self.corpus.tokens(indices)
        row, col = segments(lengths)
        width = int(lengths.max())
        return scatter_padded(row * width + col, ids, (lengths.size, width), self.special.pad)

    def targets(self, indices: np.ndarray) -> torch.Tensor | None:
        """Descriptor targets [len(indices), D] of the molecules of a batch, if any."""
        if self.descriptors is None:
            return None
        return torch.from_numpy(self.descriptors[np.asarray(indices, dtype=np.int64)])

    def columns(self, seed: int, step: int) -> torch.Tensor | None:
        """The descriptor columns training step ``step`` counts (:func:`descriptor_columns`
        of ``aux_share``); None when all count or there are no targets."""
        if self.descriptors is None or self.aux_share >= 1.0:
            return None
        return descriptor_columns(self.descriptors.shape[1], self.aux_share, seed, step)

    def _fragment_batch(self, indices: np.ndarray, rng: np.random.Generator):
        from exlm_chem.data.fragments import fragment_token_groups

        samples = []
        for i in indices:
            ids = self.corpus.get(int(i))
            # The tokens join back into the (canonical) SMILES they came from, so the corpus
            # stores no strings. A molecule truncated to max_length or holding [UNK] decodes
            # to a string RDKit mostly cannot parse: no groups, plain token masking for it.
            smiles = self.tokenizer.decode(ids)
            groups = fragment_token_groups(smiles, self.tokenizer, len(ids))
            samples.append(mask_tokens(ids, self.ratio, rng, self.special, groups))
        if self.objective == "exlm":
            return collate_exlm(samples, self.k_states, self.special)
        return collate_mlm(samples, self.special)


def descriptor_columns(n_columns: int, share: float, seed: int, step: int) -> torch.Tensor:
    """A random subset of ``round(share * n_columns)`` columns (at least 1), as a mask.

    The draw comes from a torch generator seeded by ``(seed, step)`` alone, so it does not
    depend on the process, worker or rank that makes it: a resumed run, and every rank of
    a distributed one, draws the same columns for a step.

    Parameters
    ----------
    n_columns : int
        Descriptor columns D.
    share : float
        In (0, 1].
    seed : int
        The run's seed (>= 0).
    step : int
        The optimizer step the columns are for.

    Returns
    -------
    Tensor
        bool [D], True on the drawn columns.
    """
    # SeedSequence spreads (seed, step) over the generator's 64-bit seed: manual_seed(seed
    # + step) would give seed 1's step 0 the columns of seed 0's step 1
    high, low = np.random.SeedSequence([seed, step]).generate_state(2, np.uint32)
    generator = torch.Generator().manual_seed(int(high) << 32 | int(low))
    chosen = torch.randperm(n_columns, generator=generator)[: max(1, round(share * n_columns))]
    mask = torch.zeros(n_columns, dtype=torch.bool)
    mask[chosen] = True
    return mask


class PretrainBatches(torch.utils.data.IterableDataset):
    """The endless stream of training batches from ``(epoch, position)`` on; its first
    batch is trained at optimizer step ``step``, each later one a step after."""

    def __init__(self, stream: BatchStream, maker: BatchMaker, seed: int, epoch: int,
                 position: int, rank: int = 0, world: int = 1, step: int = 0) -> None:
        super().__init__()
        self.stream, self.maker, self.seed = stream, maker, seed
        self.epoch, self.position, self.rank, self.world = epoch, position, rank, world
        self.step = step

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
            # j counts every batch of the stream, the other workers' too: batch j is the
            # j-th the training loop takes, one per optimizer step
            batch = self.maker(mine, rng)
            yield StepBatch(epoch, position, n_tokens, batch, self.maker.targets(mine),
                            self.maker.columns(self.seed, self.step + j),
                            self.maker.views(mine, rng), self.maker.canonical(mine))


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


# ----- the corpus --------------------------------------------------------------------------
RUN_CORPUS = "corpus"  # OUT/corpus: where a run prepares its --corpus files


def prepare_run_corpus(args: Any, rank: int = 0) -> Path:
    """Prepare ``args.corpus`` into ``OUT/corpus`` as ``exlm-chem corpus prepare`` does.

    :func:`~exlm_chem.data.corpus_prepare.prepare_corpus` canonicalises, deduplicates,
    applies the benchmark hygiene (``args.hygiene``) and, when ``args.aux_weight > 0``,
    stores the ``args.aux_targets`` descriptor targets. A folder already there from the same
    files and settings (a resumed or restarted run) is reused, not prepared again: that
    would cost minutes, and a resumed run must go on reading the molecules its data position
    counts.

    Parameters
    ----------
    args : PretrainArgs
        ``corpus``, ``out``, ``max_length``, ``valid_size``, ``seed``, ``corpus_limit``,
        ``hygiene``, ``aux_weight`` and ``aux_targets`` are read.
    rank : int
        Rank 0 prepares; under torch.distributed the other ranks wait for it.

    Returns
    -------
    Path
        The prepared folder, to read with :func:`~exlm_chem.data.corpus_prepare.load_prepared`.

    Raises
    ------
    ValueError
        ``OUT/corpus`` holds a corpus prepared from other files or settings: resuming on
        it would continue on different data.
    """
    from exlm_chem.data.corpus_prepare import (
        MANIFEST,
        PreparationSettings,
        preparation_differences,
        prepare_corpus,
    )

    directory = Path(args.out) / RUN_CORPUS
    settings = PreparationSettings(
        max_length=args.max_length, valid_size=args.valid_size, seed=args.seed,
        limit=args.corpus_limit, hygiene=args.hygiene,
        descriptors=args.aux_targets if args.aux_weight > 0 else None)
    if rank == 0:
        if (directory / MANIFEST).is_file():
            differ = preparation_differences(directory, args.corpus, settings)
            if differ:
                raise ValueError(f"{directory} was prepared from other files or settings "
                                 f"({'; '.join(differ)}): give the run's own corpus and "
                                 "settings, or a new --out (or remove that folder)")
            logger.info("reusing the corpus prepared in %s", directory)
        else:
            if can_resume(args.out):
                logger.warning("%s/checkpoint predates %s: its steps read the SMILES files as "
                               "written; from here on the run reads them prepared (canonical, "
                               "deduplicated)", args.out, directory)
            prepare_corpus(args.corpus, directory, settings, n_jobs=-1)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()  # the other ranks read what rank 0 prepared
    return directory


def prepared_summary(manifest: dict, directory: str | Path) -> tuple[dict, dict]:
    """Checksums (of the source files and of ``train.npz``) and the hygiene summary of a
    prepared corpus, for a checkpoint's metadata."""
    checksums = {s["path"]: s["sha256"] for s in manifest["sources"]}
    checksums[f"{directory}/train.npz"] = manifest["files"]["train.npz"]
    hygiene = {**manifest["hygiene"], "lines": manifest["counts"]["lines"],
               "prepared": str(directory)}
    return checksums, hygiene


__all__ = ["RUN_CORPUS", "BatchMaker", "PretrainBatches", "StepBatch", "descriptor_columns",
           "make_loader", "prepare_run_corpus", "prepared_summary", "to_device"]
