"""Pretrained encoders as benchmark rows: probe mode and fine-tune mode.

``probe``: embed every molecule once with the frozen encoder (cached on disk, keyed by
the checkpoint's hash, the input protocol, the data file's checksum and the protocol
version, since the seeds of a cell share it), then one logistic regression per task
(:mod:`exlm_chem.train.probe`); regression tasks get a ridge per task, its strength chosen on
the validation rows. ``finetune``: the paper's protocol, per-task settings from Table 8
(:mod:`exlm_chem.presets`), best validation epoch restored, optionally capped
by a :class:`~exlm_chem.benchmark.records.Budget`. Both pool with :data:`POOLING`, the
package's default (``mean``; the paper pools ``bos``). The paper has no regression set:
those use :data:`~exlm_chem.presets.REGRESSION_FINETUNE` (ours) and predict in the labels' units.
``estimator``: ``ExLMMoleculeClassifier`` / ``Regressor`` with their defaults, fitted on
the training and validation rows (it holds out its own ``validation_fraction``), as a
user would call it. With ``features`` (e.g. ``("rdkit2d",)``) every mode puts the
task's scaled descriptors (:mod:`exlm_chem.benchmark.features`) beside the pooled state:
concatenated to the frozen embedding before the probe, to the fine-tuned state before
the head.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.benchmark.records import PROTOCOL_VERSION, Budget, MethodOutput
from exlm_chem.benchmark.tasks import TaskData, held_out_valid, task_type
from exlm_chem.files.checksums import file_sha256
from exlm_chem.files.safe_write import atomic_path
from exlm_chem.model.pooling import DEFAULT_POOLING

MODES = ("probe", "finetune", "estimator")
# the package's default, so the benchmark measures what a user gets; it is part of each
# cell's input protocol, so changing it starts new cells instead of resuming old ones
POOLING = DEFAULT_POOLING
MAX_LENGTH = 256  # tokens per molecule including BOS/EOS before expansion
PROBE_C = 1.0  # inverse L2 strength of the probe's logistic regressions


def checkpoint_id(path: str | os.PathLike[str]) -> str:
    """``<directory name>@<first 12 hex of the weights' sha256>``: names a checkpoint
    by content, so renamed copies resume and retrained weights never do."""
    path = Path(path)
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{path} is not an exlm_chem checkpoint (no model.safetensors)")
    return f"{path.resolve().name}@{file_sha256(weights)[:12]}"


def input_protocol(path: str | os.PathLike[str]) -> dict[str, Any]:
    """How the benchmark feeds this checkpoint: ``{"expansion_k", "pooling",
    "max_length", "smiles"}``; k from
    :func:`~exlm_chem.data.inference_inputs.inference_expansion`, ``smiles`` the form of the
    molecules (:data:`~exlm_chem.benchmark.tasks.ENCODER_SMILES`)."""
    from exlm_chem.benchmark.tasks import ENCODER_SMILES
    from exlm_chem.data.inference_inputs import inference_expansion

    config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    return {"expansion_k": inference_expansion(config), "pooling": POOLING,
            "max_length": MAX_LENGTH, "smiles": ENCODER_SMILES}


def cell_finetune_settings(task: str, budget: Budget):
    """The paper's Table 8 settings for ``task``, epochs capped by ``budget.max_epochs``
    (the warm-up share and the decay to 0 are then fitted to the capped epochs)."""
    from exlm_chem.presets import REGRESSION_FINETUNE, finetune_preset

    if task_type(task) == "regression":
        settings = REGRESSION_FINETUNE
    else:
        settings = finetune_preset(task)
    if budget.max_epochs is not None and budget.max_epochs < settings.epochs:
        settings = dataclasses.replace(settings, epochs=budget.max_epochs)
    return settings


def probe_settings(kind: str = "classification") -> dict[str, Any]:
    if kind == "regression":
        from exlm_chem.train.probe import RIDGE_ALPHAS

        return {"regressor": "ridge", "alphas": list(RIDGE_ALPHAS),
                "alpha_selection": "lowest validation RMSE per task",
                "standardised": True}
    return {"classifier": "logistic_regression", "C": PROBE_C,
            "solver": "lbfgs (deterministic: seed-independent)", "standardised": True}


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
    features : sequence of str
        Feature sets beside the pooled state (:data:`~exlm_chem.benchmark.features.
        FEATURE_SETS`); empty: the encoder alone.
    feature_cache : path, optional
        Where their raw values are kept between cells and runs (probe and fine-tune modes;
        the estimator computes its own ``features=``).
    params : dict, optional
        Estimator mode: parameters set on the estimator beside its defaults (a lever
        measured as an option, e.g. ``{"target_transform": "auto"}``, or
        ``{"pretrained": None}``: the same estimator from random weights).
    parts_dir : path, optional
        Estimator mode: where each cell's members' outputs are kept (:func:`save_parts`),
        so that another weighting of network and trees is scored on the same fits without
        fitting again.
    """

    def __init__(self, path: str | os.PathLike[str], mode: str,
                 cache_dir: str | os.PathLike[str] | None = None, device: str = "auto",
                 features: tuple[str, ...] = (),
                 feature_cache: str | os.PathLike[str] | None = None,
                 params: dict[str, Any] | None = None,
                 parts_dir: str | os.PathLike[str] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.features = tuple(features)
        self.feature_cache = feature_cache
        self.params = dict(params or {})
        if self.params and mode != "estimator":
            raise ValueError(f"estimator parameters {sorted(self.params)} need the estimator "
                             f"mode, not {mode!r}")
        self.model_id = checkpoint_id(self.path)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.parts_dir = Path(parts_dir) if parts_dir is not None else None
        self.device = device
        self.inputs = input_protocol(self.path)
        self._embedder = None
        self._probe_scores: dict[tuple, np.ndarray] = {}
        self._probe_alphas: dict[tuple, list] = {}
        self._probe_valid: dict[tuple, np.ndarray] = {}  # regression: validation predictions
        self._canonical: dict[tuple, TaskData] = {}

    def __call__(self, data: TaskData, seed: int, budget: Budget,
                 progress: bool = False) -> MethodOutput:
        data = self._encoder_input(data)
        if self.mode == "probe":
            return self._probe(data, seed, progress)
        if self.mode == "estimator":
            return self._estimator(data, seed, budget, progress)
        return self._finetune(data, seed, budget, progress)

    def _encoder_input(self, data: TaskData) -> TaskData:
        """``data`` in the input protocol's SMILES form, computed once per task.

        Token id rows (prepared splits) pass as they are: their format guarantees they were
        made from canonical SMILES (:mod:`exlm_chem.benchmark.prepared`).
        """
        from exlm_chem.benchmark.tasks import with_canonical_smiles

        if not data.smiles or not isinstance(data.smiles[0], str):
            return data
        key = (data.name, hashlib.sha256("\n".join(data.smiles).encode()).hexdigest())
        if key not in self._canonical:
            self._canonical = {key: with_canonical_smiles(data)}  # one task at a time
        return self._canonical[key]._replace(train=data.train, valid=data.valid,
                                             test=data.test)

    def protocol(self, task: str, budget: Budget) -> tuple[dict, dict]:
        """(input protocol, settings) of a cell, before it runs (part of its key)."""
        from exlm_chem.benchmark.features import feature_settings

        if self.mode == "probe":
            settings = probe_settings(task_type(task))
        elif self.mode == "estimator":
            settings = estimator_settings(task, budget, self.params)
        else:
            settings = dataclasses.asdict(cell_finetune_settings(task, budget))
        return self.inputs, {**settings, **feature_settings(self._kinds(task))}

    def _kinds(self, task: str) -> tuple[str, ...]:
        """The features a cell reads: the estimator's own (``features="auto"``) where the
        row names none."""
        if self.mode == "estimator" and not self.features:
            return _estimator_class(task_type(task)).AUTO_FEATURES
        return self.features

    def embedding_cache(self, data: TaskData) -> Path | None:
        """Where ``data``'s embeddings are cached; the name hashes everything they depend
        on (model hash, input protocol, data checksum and molecules, protocol version)."""
        if self.cache_dir is None:
            return None
        text = hashlib.sha256("\n".join(data.smiles).encode()).hexdigest()
        key = json.dumps({"model": self.model_id, "inputs": self.inputs,
                          "data_sha256": data.data_sha256, "smiles_sha256": text,
                          "version": PROTOCOL_VERSION}, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return self.cache_dir / self.model_id.replace("@", "_") / f"{data.name}_{digest}.npy"

    def _embeddings(self, data: TaskData, progress: bool) -> np.ndarray:
        cached = self.embedding_cache(data)
        if cached is not None and cached.is_file():
            return np.load(cached, allow_pickle=False)
        from exlm_chem.embedding import embed
        from exlm_chem.model.molecule_model import MoleculeModel

        if self._embedder is None:
            self._embedder = MoleculeModel.from_checkpoint(self.path, device=self.device)
        if self._embedder.k_states != self.inputs["expansion_k"]:
            raise RuntimeError(f"{self.path}: embedder expands to {self._embedder.k_states}, "
                               f"the cell key says {self.inputs['expansion_k']}")
        vectors, valid = embed(data.smiles, model=self._embedder, pooling=POOLING,
                               max_length=MAX_LENGTH, progress=progress)
        if not valid.all():
            bad = np.flatnonzero(~valid)[:10].tolist()
            raise ValueError(f"{data.name}: rows {bad} passed the loader but not the embedder")
        if cached is not None:
            with atomic_path(cached) as tmp, open(tmp, "wb") as handle:
                np.save(handle, vectors, allow_pickle=False)
        return vectors

    def _probe(self, data: TaskData, seed: int, progress: bool) -> MethodOutput:
        """Frozen embeddings + per-task logistic regression.

        The lbfgs fit is deterministic, so on a seed-independent split every seed gives
        the same scores: they are computed once per split and reused for the other seeds.
        """
        from exlm_chem.train.probe import probe_scores, ridge_predictions

        rows = np.concatenate([data.train, [-1], data.valid, [-1], data.test])
        key = (data.name, hashlib.sha256(rows.astype(np.int64).tobytes()).hexdigest())
        extra: dict[str, Any] = {}
        if key not in self._probe_scores:
            vectors = self._embeddings(data, progress)
            if self.features:  # beside the frozen state; the probe standardises both
                from exlm_chem.benchmark.features import scaled_task_features

                vectors = np.hstack([vectors, scaled_task_features(data, self.features,
                                                                   self.feature_cache)])
            if data.task_type == "regression":
                self._probe_scores[key], alphas, self._probe_valid[key] = ridge_predictions(
                    vectors, data.labels, data.train, data.valid, data.test)
                self._probe_alphas[key] = alphas
            else:
                self._probe_scores[key] = probe_scores(vectors, data.labels, data.train,
                                                       data.test, C=PROBE_C)
        if key in self._probe_alphas:
            extra["chosen_alphas"] = self._probe_alphas[key]
        valid_scores = self._probe_valid.get(key)
        from exlm_chem.benchmark.features import feature_settings

        return MethodOutput(self._probe_scores[key].copy(),
                            settings={**probe_settings(data.task_type), "pooling": POOLING,
                                      **extra, **feature_settings(self.features)},
                            valid_scores=None if valid_scores is None else valid_scores.copy())

    def _finetune(self, data: TaskData, seed: int, budget: Budget,
                  progress: bool) -> MethodOutput:
        import torch

        from exlm_chem.benchmark.features import feature_settings, scaled_task_features
        from exlm_chem.device import resolve_device
        from exlm_chem.model.molecule_model import PREDICT, build_model
        from exlm_chem.model.pretrained import load_backbone
        from exlm_chem.train.finetune import LabelledSmiles, finetune

        settings = cell_finetune_settings(data.name, budget)
        features = (scaled_task_features(data, self.features, self.feature_cache)
                    if self.features else None)
        torch.manual_seed(seed)  # head initialisation and dropout
        backbone = load_backbone(self.path, preset="", dropout=settings.dropout)
        device = resolve_device(self.device)
        net = build_model(backbone.config, backbone.tokenizer, data.labels.shape[1],
                          backbone.encoder_state, settings.pooler_dropout, POOLING, MAX_LENGTH,
                          0 if features is None else features.shape[1]).to(device)
        if net.k_states != self.inputs["expansion_k"]:
            raise RuntimeError(f"{self.path}: the net expands to {net.k_states}, the cell "
                               f"key says {self.inputs['expansion_k']}")

        part = LabelledSmiles(data.smiles, data.labels, features).rows

        def predict(rows: np.ndarray) -> np.ndarray:
            return net.run([data.smiles[i] for i in rows], PREDICT, 2 * settings.batch_size,
                           None if features is None else features[rows]).astype(np.float64)

        result = finetune(net, part(data.train), settings, task=data.task_type,
                          valid=part(data.valid), progress=progress,
                          max_minutes=budget.max_minutes, seed=seed)
        outputs = predict(data.test)
        valid_outputs = None
        if data.task_type != "regression":  # regression heads predict in the labels' units
            outputs = 1.0 / (1.0 + np.exp(-outputs))
        elif len(data.valid):  # the restored best epoch's net: calibrates conformal intervals
            valid_outputs = predict(data.valid)
        return MethodOutput(outputs, valid_scores=valid_outputs,
                            epochs=len(result.history), best_epoch=result.best_epoch,
                            stopped_early=result.stopped_early,
                            settings={**dataclasses.asdict(settings),
                                      "selection": result.metric,
                                      **feature_settings(self.features)})

    def _estimator(self, data: TaskData, seed: int, budget: Budget,
                   progress: bool) -> MethodOutput:
        """The scikit-learn estimator with its defaults on train + valid (a held-out valid
        part: train alone, valid predicted); test scored.

        Labels go in as a 2-D y (NaN = missing) for every task, so a single-task set is
        one column too; descriptors are the estimator's own ``features=``.
        """
        from exlm_chem.benchmark.features import feature_settings

        est = _default_estimator(data.task_type, self.path, seed, budget, self.device,
                                 self.features, progress, self.params)
        # the estimator holds out its own share of what it is given
        rows = data.train if data.held_out_valid else np.concatenate([data.train, data.valid])
        est.fit([data.smiles[i] for i in rows], data.labels[rows])

        def predict(part: np.ndarray) -> np.ndarray:  # [len(part), T]
            smiles = [data.smiles[i] for i in part]
            return (est.predict(smiles) if data.task_type == "regression"
                    else est.predict_proba(smiles)).astype(np.float64)

        if self.parts_dir is not None:  # the members run once a part
            valid, test = save_parts(est, data, self.parts_dir / f"{data.name}_seed{seed}.npz")
        else:
            held_out = data.held_out_valid and len(data.valid) > 0
            valid, test = (predict(data.valid) if held_out else None), predict(data.test)
        # what fit chose from the data, beside the parameters it was given
        chosen: dict[str, Any] = {"tree_weight": float(est.tree_weight_)}
        if data.task_type == "regression":
            chosen["target_log"] = [bool(v) for v in est.target_log_]
        return MethodOutput(test,
                            epochs=len(est.history_),
                            best_epoch=est.best_epoch_, stopped_early=est.stopped_early_,
                            settings={**estimator_settings(data.name, budget, self.params),
                                      # as run (the key's is the suite's default)
                                      "fit_rows": "train" if data.held_out_valid
                                      else "train + valid",
                                      "selection": est.selection_metric_, "chosen": chosen,
                                      **feature_settings(self._kinds(data.name))},
                            valid_scores=valid)


def save_parts(est: Any, data: TaskData,
               path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """A fitted estimator's members on a cell's test part and, where it is held out
    (:attr:`TaskData.held_out_valid`), its valid part, apart, as an ``.npz`` written
    atomically: ``{part}_network`` and ``{part}_trees`` [n, T] on the output scale
    (probabilities, values; no trees: NaN), ``{part}_labels`` [n, T], ``chosen_weight``,
    and the held-out molecules that chose it (``held_out_network``, ``held_out_trees``,
    ``held_out_labels`` on the scale the choice read; empty without). A cell fitted on all
    of ``train_val`` keeps its test part alone: a reported row can then be scored under
    another weighting without fitting again.

    Returns the estimator's predictions of the valid part (None where it is not held out)
    and of the test part [n, T] (probabilities, values: ``predict_proba`` / ``predict``'s),
    combined from the same members' outputs.
    """
    from scipy.special import expit

    from exlm_chem.files.safe_write import atomic_path

    arrays: dict[str, np.ndarray] = {"chosen_weight": np.array(float(est.tree_weight_))}
    parts = {"test": data.test}
    if data.held_out_valid and len(data.valid):
        parts["valid"] = data.valid
    predictions: dict[str, np.ndarray] = {}
    for name, part in parts.items():
        inputs = est._prepared([data.smiles[i] for i in part], "raise")
        samples, trees = est._all_outputs(inputs.smiles, inputs.features,
                                          inputs.checked.valid_molecules)
        combined = inputs.scatter(est._aggregate(samples, trees)).values  # [n, T]
        predictions[name] = combined if data.task_type == "regression" else expit(combined)
        arrays[f"{name}_network"] = est._spread_scale(samples).mean(axis=(0, 1))  # [n, T]
        arrays[f"{name}_trees"] = (np.full_like(arrays[f"{name}_network"], np.nan)
                                   if trees is None else est._spread_scale(trees))
        arrays[f"{name}_labels"] = data.labels[part]
    choice, empty = getattr(est, "_held_out_choice", None), np.zeros((0, 0))
    arrays.update(held_out_network=empty if choice is None else choice.network,
                  held_out_trees=empty if choice is None else choice.trees,
                  held_out_labels=empty if choice is None else choice.labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return predictions.get("valid"), predictions["test"]


def _default_estimator(kind: str, path: Path, seed: int, budget: Budget, device: str,
                       features: tuple[str, ...], progress: bool = False,
                       params: dict[str, Any] | None = None) -> Any:
    """An estimator with its default settings, from ``path``, capped by ``budget``;
    ``features`` empty: its own (``"auto"``); ``params`` set beside the defaults."""
    est = _estimator_class(kind)(str(path), random_state=seed, device=device,
                                 progress=progress, features=list(features) or "auto",
                                 max_minutes=budget.max_minutes)
    est.set_params(**(params or {}))
    if budget.max_epochs is not None and budget.max_epochs < est.epochs:
        est.set_params(epochs=budget.max_epochs)
    return est


def _estimator_class(kind: str) -> type:
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    return ExLMMoleculeRegressor if kind == "regression" else ExLMMoleculeClassifier


def estimator_settings(task: str, budget: Budget,
                       params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The estimator's settings a cell runs with (part of its key): its defaults, and
    ``params`` set beside them."""
    est = _default_estimator(task_type(task), Path("."), 0, budget, "cpu", (), params=params)
    skip = {"random_state", "device", "progress", "features", "n_jobs", "max_minutes"}
    # the checkpoint is in the cell key already; only its absence (random weights) is news
    if (params or {}).get("pretrained", "default") is not None:
        skip.add("pretrained")
    return {"estimator": type(est).__name__,
            "fit_rows": "train" if held_out_valid(task) else "train + valid",
            **{k: v for k, v in est.get_params().items() if k not in skip}}
