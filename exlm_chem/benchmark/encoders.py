"""Pretrained encoders as benchmark rows: probe mode and fine-tune mode.

``probe``: embed every molecule once with the frozen encoder (cached on disk per
checkpoint and task, since the seeds of a cell share it), then one logistic regression per
task (:mod:`exlm_chem.probe`). ``finetune``: the paper's protocol, per-task settings from
Table 8 (:mod:`exlm_chem.finetune_settings`), best validation epoch restored, optionally
capped by a :class:`~exlm_chem.benchmark.records.Budget`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.records import Budget, MethodOutput, TaskData

MODES = ("probe", "finetune")


def checkpoint_id(path: str | os.PathLike[str]) -> str:
    """``<directory name>@<first 12 hex of the weights' sha256>``: names a checkpoint
    by content, so renamed copies resume and retrained weights never do."""
    path = Path(path)
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{path} is not an exlm_chem checkpoint (no model.safetensors)")
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"{path.resolve().name}@{digest.hexdigest()[:12]}"


class EncoderMethod:
    """One checkpoint in one mode; call it like any benchmark method.

    Parameters
    ----------
    path : path
        Checkpoint directory (``exlm-chem pretrain`` output or a shipped model).
    mode : {"probe", "finetune"}
    cache_dir : path, optional
        Where probe embeddings are kept between cells and runs.
    device : str
        ``"auto"``: CUDA when available.
    """

    def __init__(self, path: str | os.PathLike[str], mode: str,
                 cache_dir: str | os.PathLike[str] | None = None, device: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.model_id = checkpoint_id(self.path)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.device = device
        self._embedder = None
        self._probe_scores: dict[tuple, np.ndarray] = {}

    def __call__(self, data: TaskData, seed: int, budget: Budget,
                 progress: bool = False) -> MethodOutput:
        if self.mode == "probe":
            return self._probe(data, seed, progress)
        return self._finetune(data, seed, budget, progress)

    # probe ---------------------------------------------------------------------------
    def _embeddings(self, data: TaskData, progress: bool) -> np.ndarray:
        cached = None
        if self.cache_dir is not None:
            # keyed by content too: a different file revision must not reuse vectors
            text = hashlib.sha256("\n".join(data.smiles).encode()).hexdigest()[:12]
            cached = self.cache_dir / self.model_id.replace("@", "_") / f"{data.name}_{text}.npy"
            if cached.is_file():
                return np.load(cached, allow_pickle=False)
        from exlm_chem.embed import Embedder, embed

        if self._embedder is None:
            self._embedder = Embedder.from_checkpoint(self.path, device=self.device)
        vectors, valid = embed(data.smiles, model=self._embedder, progress=progress)
        if not valid.all():
            bad = np.flatnonzero(~valid)[:10].tolist()
            raise ValueError(f"{data.name}: rows {bad} passed the loader but not the embedder")
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".partial.npy")
            np.save(partial, vectors, allow_pickle=False)
            os.replace(partial, cached)
        return vectors

    def _probe(self, data: TaskData, seed: int, progress: bool) -> MethodOutput:
        """Frozen embeddings + per-task logistic regression.

        The lbfgs fit is deterministic, so on a seed-independent split every seed gives
        the same scores: they are computed once per split and reused for the other seeds.
        """
        from exlm_chem.probe import probe_scores

        C = 1.0
        key = (data.name, hashlib.sha256(np.concatenate([data.train, [-1], data.test])
                                         .astype(np.int64).tobytes()).hexdigest())
        if key not in self._probe_scores:
            vectors = self._embeddings(data, progress)
            self._probe_scores[key] = probe_scores(vectors, data.labels, data.train,
                                                   data.test, C=C)
        return MethodOutput(self._probe_scores[key].copy(),
                            settings={"classifier": "logistic_regression", "C": C,
                                      "solver": "lbfgs (deterministic: seed-independent)",
                                      "pooling": "bos", "standardised": True})

    # fine-tune -----------------------------------------------------------------------
    def _finetune(self, data: TaskData, seed: int, budget: Budget,
                  progress: bool) -> MethodOutput:
        import torch

        from exlm_chem.estimator_io import load_backbone, resolve_device
        from exlm_chem.finetune import (
            LabelledSmiles,
            build_finetune_net,
            finetune,
            finetune_preset,
            predict_batched,
        )

        settings = finetune_preset(data.name)
        if budget.max_epochs is not None and budget.max_epochs < settings.epochs:
            # the schedule (warm-up share, decay to 0) is fitted to the capped epochs
            settings = dataclasses.replace(settings, epochs=budget.max_epochs)
        torch.manual_seed(seed)  # head initialisation and dropout
        backbone = load_backbone(self.path, preset="", dropout=settings.dropout)
        device = resolve_device(self.device)
        net = build_finetune_net(backbone.config, backbone.tokenizer, data.labels.shape[1],
                                 backbone.encoder_state, settings.pooler_dropout).to(device)

        def part(rows: np.ndarray) -> LabelledSmiles:
            return LabelledSmiles([data.smiles[i] for i in rows], data.labels[rows])

        result = finetune(net, part(data.train), settings, valid=part(data.valid),
                          progress=progress, max_minutes=budget.max_minutes, seed=seed)
        logits = predict_batched(net, [data.smiles[i] for i in data.test],
                                 2 * settings.batch_size)
        return MethodOutput(1.0 / (1.0 + np.exp(-logits.astype(np.float64))),
                            epochs=len(result.history), best_epoch=result.best_epoch,
                            stopped_early=result.stopped_early,
                            settings={**dataclasses.asdict(settings),
                                      "selection": result.metric})
