"""What the two scikit-learn estimators share: parameters, fit, batched outputs, I/O.

The public classes live in :mod:`exlm_chem.sklearn.estimator`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import fields
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from exlm_chem.data.descriptors import (
    USER_KIND,
    FeatureScaler,
    FeatureSpec,
    feature_kinds,
    feature_names,
    molecule_features,
    rdkit_version,
)
from exlm_chem.data.featurize import check_smiles, raise_for_invalid, warn_unknown_tokens
from exlm_chem.device import resolve_device
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS
from exlm_chem.presets import FinetuneSettings
from exlm_chem.sklearn.inputs import (
    Targets,
    as_smiles_list,
    default_column_names,
    smiles_and_columns,
)
from exlm_chem.sklearn.persistence import PersistenceMixin
from exlm_chem.uncertainty.ensemble import bootstrap_rows, member_seeds
from exlm_chem.uncertainty.mixin import UncertaintyMixin
from exlm_chem.uncertainty.params import uncertainty_problems

_FIT_POLICIES = ("raise", "drop")
_PREDICT_POLICIES = ("nan", "raise")


class ValidRows(NamedTuple):
    """The usable part of a prediction input."""

    n: int  # rows of X
    rows: np.ndarray  # [n_valid] positions of the valid SMILES in X
    smiles: list[str]  # their canonical SMILES: the form the model was trained on
    features: np.ndarray | None  # [n_valid, F] scaled features, when the model reads some


class ExLMEstimatorBase(UncertaintyMixin, PersistenceMixin, BaseEstimator):
    """Fine-tunes a pre-trained ExLM encoder plus a head on SMILES (see subclasses)."""

    _task: ClassVar[str]

    def __init__(
        self,
        pretrained: str | os.PathLike[str] | None = "default",
        *,
        preset: str = "small",
        epochs: int = 30,
        batch_size: int = 32,
        lr: float = 1e-4,
        warmup_ratio: float = 0.06,
        dropout: float = 0.1,
        pooler_dropout: float = 0.1,
        weight_decay: float = 0.0,
        clip_norm: float = 1.0,
        validation_fraction: float = 0.1,
        patience: int | None = 5,
        pooling: str = DEFAULT_POOLING,
        max_length: int = 256,
        random_state: int | np.random.RandomState | None = None,
        device: str = "auto",
        on_invalid: str = "raise",
        max_minutes: float | None = None,
        progress: bool = False,
        augment: int = 0,
        tta: int = 0,
        n_models: int = 1,
        bootstrap: bool = False,
        calibrate: str | None = None,
        features: str | list[str] | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.pretrained = pretrained
        self.preset = preset
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.warmup_ratio = warmup_ratio
        self.dropout = dropout
        self.pooler_dropout = pooler_dropout
        self.weight_decay = weight_decay
        self.clip_norm = clip_norm
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.pooling = pooling
        self.max_length = max_length
        self.random_state = random_state
        self.device = device
        self.on_invalid = on_invalid
        self.max_minutes = max_minutes
        self.progress = progress
        self.augment = augment
        self.tta = tta
        self.n_models = n_models
        self.bootstrap = bootstrap
        self.calibrate = calibrate
        self.features = features
        self.n_jobs = n_jobs

    # ---- hooks for subclasses -------------------------------------------------------------
    def _targets(self, y: Any, n: int) -> Targets:
        raise NotImplementedError

    def _set_targets(self, targets: Targets) -> None:
        """Store target facts learned in fit (e.g. ``classes_``)."""

    def _fitted_metadata(self) -> dict[str, Any]:
        return {}

    def _restore_metadata(self, fitted: dict[str, Any]) -> None:
        """Inverse of :meth:`_fitted_metadata`."""

    # ---- fit -------------------------------------------------------------------------------
    def _settings(self) -> FinetuneSettings:
        problems = []
        if self.on_invalid not in _FIT_POLICIES:
            problems.append(f"on_invalid must be one of {_FIT_POLICIES} in fit (predict "
                            f"methods take on_invalid='nan'|'raise'), got {self.on_invalid!r}")
        if self.pooling not in POOLINGS:
            problems.append(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        vf = self.validation_fraction
        if not isinstance(vf, int | float) or isinstance(vf, bool) or not 0 <= vf < 1:
            problems.append(f"validation_fraction must be in [0, 1), got {vf!r}")
        ml = self.max_length
        if not isinstance(ml, int | np.integer) or isinstance(ml, bool) or ml < 3:
            problems.append(f"max_length must be an integer >= 3, got {ml!r}")
        pa = self.patience
        if pa is not None and (not isinstance(pa, int | np.integer) or isinstance(pa, bool)
                               or pa < 1):
            problems.append(f"patience must be None or an integer >= 1, got {pa!r}")
        mm = self.max_minutes
        if mm is not None and (not isinstance(mm, int | float) or not mm > 0):
            problems.append(f"max_minutes must be None or > 0, got {mm!r}")
        settings = None
        try:
            settings = FinetuneSettings(**{f.name: getattr(self, f.name)
                                           for f in fields(FinetuneSettings)})
        except ValueError as err:
            problems.insert(0, str(err))
        try:
            feature_kinds(self.features)
        except ValueError as err:
            problems.append(str(err))
        nj = self.n_jobs
        if nj is not None and (not isinstance(nj, int | np.integer) or isinstance(nj, bool)
                               or nj == 0):
            problems.append(f"n_jobs must be None or a non-zero integer, got {nj!r}")
        problems += uncertainty_problems(self, self._task)
        if problems:  # every problem at once, not one per attempt
            raise ValueError("; ".join(problems))
        return settings

    def fit(self, X: Any, y: Any) -> Self:
        """Fine-tune on SMILES ``X`` and labels ``y``; returns ``self``.

        With ``on_invalid="raise"`` any unusable SMILES raises one
        :class:`~exlm_chem.data.featurize.InvalidSmilesError` listing every bad row; with
        ``"drop"`` those rows are left out with a warning and marked in
        ``fit_invalid_mask_``. A share ``validation_fraction`` of the molecules (random,
        seeded by ``random_state``) picks the best epoch.
        """
        import torch

        from exlm_chem.model.pretrained import load_backbone
        from exlm_chem.train.finetune import LabelledSmiles, finetune
        from exlm_chem.train.finetune_net import build_finetune_net

        settings = self._settings()
        kinds = feature_kinds(self.features)
        smiles, columns, column_names = self._split_X(X, kinds)
        targets = self._targets(y, len(smiles))
        checked = check_smiles(smiles)
        if self.on_invalid == "raise":
            raise_for_invalid(smiles, checked)
        keep = checked.valid
        if not keep.any():
            raise ValueError("none of the SMILES in X is valid; nothing to train on")
        if not keep.all():
            warnings.warn(f"{int((~keep).sum())} invalid SMILES left out of training "
                          "(rows marked in fit_invalid_mask_)", UserWarning, stacklevel=2)
        rows = np.flatnonzero(keep)
        smiles, labels = [checked.canonical[i] for i in rows], targets.labels[rows]
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        order = np.random.default_rng(seed).permutation(len(smiles))
        n_valid = round(self.validation_fraction * len(smiles))
        n_valid = n_valid if 0 < n_valid < len(smiles) else 0

        spec, features = None, None
        if kinds:  # scaled on the training rows only: the held-out rows stay unseen
            raw = self._raw_features(kinds, smiles, None if columns is None else columns[rows])
            if columns is not None and column_names is None:
                column_names = default_column_names(columns.shape[1])
            names = {k: column_names if k == USER_KIND else feature_names(k) for k in kinds}
            spec = FeatureSpec(kinds, names, FeatureScaler.fit(raw[order[n_valid:]]),
                               rdkit_version())
            features = spec.scaler.transform(raw)  # [n_valid_rows, F]

        def part(idx: np.ndarray) -> LabelledSmiles:
            return LabelledSmiles([smiles[i] for i in idx], labels[idx],
                                  None if features is None else features[idx])

        train, valid = part(order[n_valid:]), part(order[:n_valid]) if n_valid else None
        if valid is None and self.calibrate is not None:
            raise ValueError(f"calibrate={self.calibrate!r} needs held-out molecules, but "
                             f"validation_fraction={self.validation_fraction} of "
                             f"{len(smiles)} molecules leaves none")

        device = resolve_device(self.device)
        cuda = [device.index or 0] if device.type == "cuda" else []
        patience = None if self.patience is None else int(self.patience)
        members = []
        for member_seed in member_seeds(seed, int(self.n_models)):
            member_train = train
            if self.bootstrap:
                member_train = part(order[n_valid:][bootstrap_rows(len(order) - n_valid,
                                                                   member_seed)])
            with torch.random.fork_rng(devices=cuda):  # reproducible, global RNG untouched
                torch.manual_seed(member_seed)
                backbone = load_backbone(self.pretrained, self.preset, settings.dropout)
                if not members:
                    warn_unknown_tokens(backbone.tokenizer, smiles, rows)
                net = build_finetune_net(backbone.config, backbone.tokenizer, labels.shape[1],
                                         backbone.encoder_state, settings.pooler_dropout,
                                         self.pooling, int(self.max_length),
                                         0 if spec is None else spec.n_features).to(device)
                result = finetune(net, member_train, settings, self._task, valid,
                                  bool(self.progress), self.max_minutes, member_seed,
                                  int(self.augment), patience=patience)
            members.append((net, result))
        net, result = members[0]
        self.__dict__.pop("invalid_mask_", None)  # belongs to the previous model's outputs
        self._set_targets(targets)
        self.n_tasks_ = labels.shape[1]
        self.multitask_ = targets.multitask
        self.task_names_ = targets.task_names
        self.fit_invalid_mask_ = ~keep
        self.model_, self.config_, self.tokenizer_ = net, backbone.config, backbone.tokenizer
        self.pretrained_source_ = backbone.source
        self.history_ = result.history
        self.best_epoch_ = result.best_epoch
        self.best_score_ = result.best_score
        self.selection_metric_ = result.metric
        self.stopped_early_ = result.stopped_early
        self.models_ = [m for m, _ in members]
        self.seed_ = seed
        self.feature_spec_ = spec
        self.calibrator_, self.conformity_scores_ = None, None
        if valid is not None:
            self._fit_held_out(valid.smiles, valid.labels, valid.features)
        return self

    # ---- features beside the encoder -------------------------------------------------------
    @staticmethod
    def _split_X(X: Any, kinds: tuple[str, ...]
                 ) -> tuple[list[Any], np.ndarray | None, list[str] | None]:
        """(SMILES, the user's feature columns [N, F] or None, their names)."""
        if USER_KIND in kinds:
            return smiles_and_columns(X)
        return as_smiles_list(X), None, None

    def _raw_features(self, kinds: tuple[str, ...], smiles: list[str],
                      columns: np.ndarray | None) -> np.ndarray:
        """Unscaled features [n, F] of valid canonical SMILES, kinds side by side; each
        distinct molecule is computed once (TTA views, members and epochs reuse them)."""
        computed = [k for k in kinds if k != USER_KIND]
        values = molecule_features(computed, smiles, self.n_jobs)
        blocks, start = [], 0
        for kind in kinds:
            if kind == USER_KIND:
                blocks.append(columns.astype(np.float32))
            else:
                width = len(feature_names(kind))
                blocks.append(values[:, start : start + width])
                start += width
        return np.concatenate(blocks, axis=1)

    # ---- outputs ---------------------------------------------------------------------------
    def _valid_rows(self, X: Any, on_invalid: str) -> ValidRows:
        """The valid rows of X and their scaled features; sets ``invalid_mask_``."""
        check_is_fitted(self, "model_")
        self.__dict__.pop("invalid_mask_", None)  # never the previous call's, even if this fails
        if on_invalid not in _PREDICT_POLICIES:
            raise ValueError(f"on_invalid must be one of {_PREDICT_POLICIES}, got {on_invalid!r}")
        spec = getattr(self, "feature_spec_", None)  # absent in pickles from before features
        kinds = () if spec is None else spec.kinds
        smiles, columns, names = self._split_X(X, kinds)
        if columns is not None:
            fitted = spec.names[USER_KIND]
            if columns.shape[1] != len(fitted):
                raise ValueError(f"X has {columns.shape[1]} feature columns, the model was "
                                 f"fitted with {len(fitted)}: {fitted}")
            # names are compared when both sides have them (DataFrames): a swapped column
            # would otherwise be read as the other feature without a word
            if names is not None and fitted != default_column_names(len(fitted)) \
                    and names != fitted:
                raise ValueError(f"X's feature columns {names} are not the ones the model "
                                 f"was fitted with: {fitted}")
        checked = check_smiles(smiles)
        self.invalid_mask_ = ~checked.valid  # set before raising: it says which rows failed
        if on_invalid == "raise":
            raise_for_invalid(smiles, checked)
        rows = np.flatnonzero(checked.valid)
        valid_smiles = [checked.canonical[i] for i in rows]  # the form the model was trained on
        warn_unknown_tokens(self.tokenizer_, valid_smiles, rows, stacklevel=5)
        features = None
        if spec is not None:
            raw = self._raw_features(kinds, valid_smiles,
                                     None if columns is None else columns[rows])
            features = spec.scaler.transform(raw)
        return ValidRows(len(smiles), rows, valid_smiles, features)

    def _outputs(self, X: Any, on_invalid: str, embed: bool = False) -> np.ndarray:
        """Outputs [N, n_tasks] float64 (see :meth:`_aggregate`) or the head's input
        [N, d + F] float32 (of the first member, see :meth:`transform`); NaN rows for bad
        SMILES."""
        from exlm_chem.train.finetune_net import predict_batched

        valid = self._valid_rows(X, on_invalid)
        if embed:
            states = predict_batched(self._net(self.model_), valid.smiles,
                                     2 * self.batch_size, True)  # [n_valid, d]
            if valid.features is not None:  # the head reads them beside the pooled state
                states = np.concatenate([states, valid.features], axis=1)
            out = np.full((valid.n, self.config_.d_model + self._n_features), np.nan,
                          dtype=np.float32)
            out[valid.rows] = states
            return out
        out = np.full((valid.n, self.n_tasks_), np.nan)
        out[valid.rows] = self._aggregate(self._samples(valid.smiles, valid.features))
        return out

    def _net(self, net: Any) -> Any:
        device = resolve_device(self.device)  # .to() walks every parameter even when a no-op
        return net if net.device == device else net.to(device)

    @property
    def _n_features(self) -> int:
        spec = getattr(self, "feature_spec_", None)  # absent in pickles from before features
        return 0 if spec is None else spec.n_features

    def transform(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """What the head reads: the fitted encoder's pooled state and, for a model fitted
        with ``features``, those features as scaled for the head.

        Returns
        -------
        ndarray float32 [N, d + F]
            Columns ``0 .. d-1``: the pooled encoder state of the first member; columns
            ``d ..``: the ``F`` scaled features in the order of
            :meth:`get_feature_names_out` (none without ``features``). NaN rows for
            invalid SMILES (``invalid_mask_``), or raise with ``on_invalid="raise"``.
            X is read as in ``predict`` (with ``"columns"``: SMILES first, then them).
        """
        return self._outputs(X, on_invalid, embed=True)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of :meth:`transform`'s columns: ``emb_0 .. emb_{d-1}`` (as
        ``exlm-chem embed`` names them), then the feature names (descriptor names, Morgan
        entries, your columns), kind by kind."""
        from exlm_chem.sklearn.embedder import FEATURE_PREFIX

        check_is_fitted(self, "model_")
        spec = getattr(self, "feature_spec_", None)
        extra = [] if spec is None else [n for k in spec.kinds for n in spec.names[k]]
        states = [f"{FEATURE_PREFIX}{j}" for j in range(self.config_.d_model)]
        return np.asarray(states + extra, dtype=object)

    def _scored_rows(self) -> np.ndarray:
        """Rows of the last outputs that can be scored; warns about the others."""
        if self.invalid_mask_.any():
            warnings.warn(f"{int(self.invalid_mask_.sum())} invalid SMILES left out of the "
                          "score", UserWarning, stacklevel=3)
        return np.flatnonzero(~self.invalid_mask_)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"X_types": ["string"], "requires_y": True, "multioutput": True}
