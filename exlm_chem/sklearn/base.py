"""What the two scikit-learn estimators share: parameters, the fit loop, the outputs.

Thin clients of :class:`~exlm_chem.model.molecule_model.MoleculeModel`: ``fit`` fine-tunes
one model per ensemble member; a prediction checks its SMILES once at the edge
(``MoleculeModel.prepare``) and runs the members over the SMILES views in the model's one
inference loop. The fit loop reads top to bottom as skorch's: check, hold out, features,
tree head, members, what the held-out molecules decide (the trees' weight, calibration,
conformal scores). Classifier and regressor differ in ``_task`` and their target hooks,
never in base-class order. The public classes live in :mod:`exlm_chem.sklearn.estimator`;
the mechanisms the fit loop and the outputs call in their own modules: the parameter checks
(:mod:`.params`), the held-out molecules (:func:`~exlm_chem.data.splits.held_out_split`)
and the ensemble (:mod:`.ensemble`: the members, the tree head and its weight, how their
outputs combine).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, ClassVar, Self

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from exlm_chem.data.feature_spec import USER_KIND, FeatureSpec, feature_kinds, raw_features
from exlm_chem.data.featurize import check_smiles, raise_for_invalid, warn_unknown_tokens
from exlm_chem.data.splits import held_out_split
from exlm_chem.device import resolve_device
from exlm_chem.model.frozen_trees import DEFAULT_TREE_WEIGHT, STATES_KIND, tree_booster, tree_kinds
from exlm_chem.model.molecule_model import EMBED, PREDICT, ModelInputs, ModelOutputs
from exlm_chem.model.pooling import DEFAULT_POOLING
from exlm_chem.sklearn import persistence
from exlm_chem.sklearn.ensemble import (
    aggregate,
    combined,
    decide_on_held_out,
    fit_tree_head,
    output_scale,
    reads_held_out_trees,
    resolve_tree_weight,
    uses_forest,
)
from exlm_chem.sklearn.inputs import Targets, check_feature_columns, default_column_names, split_X
from exlm_chem.sklearn.members import fit_members, frozen_encoder, member_outputs
from exlm_chem.sklearn.params import fit_settings
from exlm_chem.sklearn.target_transform import choose_log, forward
from exlm_chem.uncertainty.ensemble import Spread, combine


class ExLMEstimatorBase(BaseEstimator):
    """Fine-tunes a pre-trained ExLM encoder plus a head on SMILES (see subclasses)."""

    _task: ClassVar[str]  # "classification" or "regression"
    #: the kinds ``features="auto"`` reads: each estimator's measured default
    AUTO_FEATURES: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        pretrained: str | os.PathLike[str] | None = "default",
        *,
        preset: str = "small",
        epochs: int = 2,
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
        features: str | list[str] | None = "auto",
        n_jobs: int | None = None,
        tree_head: bool = True,
        tree_weight: float | tuple[float, ...] | str | None = "auto",
        tree_forest: bool | None = None,
        tree_features: str | list[str] = "auto",
        tree_booster: str = "auto",
        tree_params: dict[str, Any] | None = None,
        head_first: bool = True,
        train_layers: int | None = 3,
        target_transform: str | None = "auto",
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
        self.tree_head = tree_head
        self.tree_weight = tree_weight
        self.tree_forest = tree_forest
        self.tree_features = tree_features
        self.tree_booster = tree_booster
        self.tree_params = tree_params
        self.head_first = head_first
        self.train_layers = train_layers
        self.target_transform = target_transform

    # ---- what the subclasses define -------------------------------------------------------
    def _targets(self, y: Any, n: int) -> Targets:
        raise NotImplementedError

    def _set_targets(self, targets: Targets) -> None:
        """Store target facts learned in fit (e.g. ``classes_``)."""

    def _fitted_metadata(self) -> dict[str, Any]:
        return {}

    def _restore_metadata(self, fitted: dict[str, Any]) -> None:
        """Inverse of :meth:`_fitted_metadata`."""

    # ---- fit -------------------------------------------------------------------------------
    def _uses_forest(self, booster: str) -> bool:
        """Whether fit adds the forest to the tree head of ``booster``
        (:func:`~exlm_chem.sklearn.ensemble.uses_forest`)."""
        return uses_forest(self._task, self.tree_head, self.tree_forest, booster)

    def fit(self, X: Any, y: Any) -> Self:
        """Fine-tune on SMILES ``X`` and labels ``y``; returns ``self``.

        With ``on_invalid="raise"`` any unusable SMILES raises one
        :class:`~exlm_chem.data.featurize.InvalidSmilesError` listing every bad row; with
        ``"drop"`` those rows are left out with a warning and marked in
        ``fit_invalid_mask_``. A share ``validation_fraction`` of the molecules, whole
        scaffolds drawn with ``random_state``, picks the best epoch and the trees' weight.
        """
        import torch

        from exlm_chem.model.pretrained import load_backbone
        from exlm_chem.train.finetune import LabelledSmiles

        settings = fit_settings(self, self._task)
        kinds = feature_kinds(self.features, auto=self.AUTO_FEATURES)
        smiles, columns, column_names = split_X(X, kinds)
        targets = self._targets(y, len(smiles))

        # the one check of fit's SMILES; the model reads the canonical form, the
        # descriptors and the tree head the molecules it parsed
        computes = bool(self.tree_head) or any(kind != USER_KIND for kind in kinds)
        checked = check_smiles(smiles, keep_molecules=computes)
        if self.on_invalid == "raise":
            raise_for_invalid(smiles, checked)
        if not checked.valid.any():
            raise ValueError("none of the SMILES in X is valid; nothing to train on")
        if not checked.valid.all():
            warnings.warn(f"{int((~checked.valid).sum())} invalid SMILES left out of training "
                          "(rows marked in fit_invalid_mask_)", UserWarning, stacklevel=2)
        rows, canonical, molecules = checked.rows, checked.valid_smiles, checked.valid_molecules
        # every member and tree learns the transformed targets; outputs come back on y's
        # scale (_spread_scale)
        target_log = choose_log(targets.labels[rows], self.target_transform
                                if self._task == "regression" else None, targets.task_names)
        labels = forward(targets.labels[rows], target_log)

        # held-out molecules, whole scaffolds: they choose the best epoch and the trees'
        # weight, and fit calibration / intervals
        split = held_out_split(canonical, self.random_state, self.validation_fraction)
        seed, train_rows, valid_rows = split
        n_valid = len(valid_rows)
        if not n_valid and self.calibrate is not None:
            raise ValueError(f"calibrate={self.calibrate!r} needs held-out molecules, but "
                             f"validation_fraction={self.validation_fraction} of "
                             f"{len(canonical)} molecules leaves none")

        spec, features = None, None
        if kinds:  # scaled on the training rows only: the held-out rows stay unseen
            raw = raw_features(kinds, canonical, None if columns is None else columns[rows],
                               self.n_jobs, molecules)  # each molecule computed once
            if columns is not None and column_names is None:
                column_names = default_column_names(columns.shape[1])
            spec = FeatureSpec.fit(kinds, raw, train_rows, column_names)
            features = spec.scaler.transform(raw)  # [n_valid_rows, F]

        with torch.random.fork_rng(devices=[]):  # loading draws throw-away initial weights
            backbone = load_backbone(self.pretrained, self.preset, settings.dropout)
        warn_unknown_tokens(backbone.tokenizer, canonical, rows)
        frozen, states = None, None
        booster = tree_booster(self.tree_booster, labels.shape[1])
        read = tree_kinds(self.tree_features, booster) if self.tree_head else ()
        if STATES_KIND in read or self.head_first:  # what the encoder knows before tuning
            frozen = self._on_device(frozen_encoder(backbone, seed, self.pooling,
                                                    int(self.max_length))).eval()
            states = frozen.run(canonical, EMBED, 2 * self.batch_size)  # [n, d]
        trees = None
        weight_rule = resolve_tree_weight(self.tree_weight, self._task, booster, n_valid)
        if self.tree_head:  # scored on the held-out molecules, kept by the refit rule
            trees = fit_tree_head(read, frozen, states, canonical, molecules, labels, split,
                                  self._task, booster, forest=self._uses_forest(booster),
                                  tree_params=self.tree_params,
                                  score_held_out=reads_held_out_trees(
                                      self._task, weight_rule, self.calibrate),
                                  n_jobs=self.n_jobs)
        data = LabelledSmiles(canonical, labels, features,
                              states if self.head_first else None)
        train, valid = data.rows(train_rows), data.rows(valid_rows) if n_valid else None
        members = fit_members(self, self._task, backbone, settings, train, valid, spec, seed)

        # what fit learned
        first = members[0][1]
        self._set_targets(targets)
        self.target_log_ = target_log
        self.n_tasks_ = labels.shape[1]
        self.multitask_ = targets.multitask
        self.task_names_ = targets.task_names
        self.fit_invalid_mask_ = ~checked.valid
        self.fit_invalid_reasons_ = list(checked.reasons)
        self.held_out_mask_ = np.zeros(len(smiles), dtype=bool)  # [N_fit]
        self.held_out_mask_[rows[valid_rows]] = True
        self.models_ = [model for model, _ in members]
        self.model_ = self.models_[0]
        self.config_, self.tokenizer_ = backbone.config, backbone.tokenizer
        self.pretrained_source_ = backbone.source
        self.history_ = first.history
        self.best_epoch_ = first.best_epoch
        self.best_score_ = first.best_score
        self.selection_metric_ = first.metric
        self.stopped_early_ = first.stopped_early
        self.seed_ = seed
        self.feature_spec_ = spec
        self.tree_head_ = None if trees is None else trees.head
        self._fit_held_out(valid, None if trees is None else trees.held_out, weight_rule)
        return self

    def _fit_held_out(self, valid: Any, trees: np.ndarray | None, weight_rule: Any) -> None:
        """What the held-out molecules ``valid`` decide beside the best epoch
        (:func:`~exlm_chem.sklearn.ensemble.decide_on_held_out`); ``trees`` [n, T]: their
        outputs of the tree head's fit without them (None without one); ``weight_rule``:
        ``tree_weight`` resolved for this fit (:func:`~exlm_chem.sklearn.ensemble.
        resolve_tree_weight`)."""
        decided = decide_on_held_out(
            self._task, weight_rule, self.calibrate, self.target_log_, trees,
            None if valid is None else valid.labels,
            lambda: self._samples(valid.smiles, valid.features))
        self.tree_weight_ = decided.tree_weight
        self.calibrator_, self.conformity_scores_ = decided.calibrator, decided.conformity_scores
        self._held_out_choice = decided.choice  # what chose the weight (diagnostics, not saved)

    # ---- X ---------------------------------------------------------------------------------
    def _prepared(self, X: Any, on_invalid: str) -> ModelInputs:
        """X checked at the edge of a prediction call: its SMILES (each distinct one parsed
        once) and the scaled features of the valid rows."""
        check_is_fitted(self, "model_")
        spec = getattr(self, "feature_spec_", None)  # absent in pickles from before features
        smiles, columns, names = split_X(X, () if spec is None else spec.kinds)
        if columns is not None:
            check_feature_columns(columns, names, spec.names[USER_KIND])
        return self._prepared_rows(smiles, columns, on_invalid)

    def _prepared_rows(self, smiles: list[Any], columns: np.ndarray | None,
                       on_invalid: str) -> ModelInputs:  # the CLI's way in: columns apart
        trees = getattr(self, "tree_head_", None) is not None  # its descriptors read them
        return self._on_device(self.model_).prepare(smiles, columns, on_invalid, self.n_jobs,
                                                    molecules=trees)

    # ---- outputs ---------------------------------------------------------------------------
    def _on_device(self, model: Any) -> Any:
        device = resolve_device(self.device)  # .to() walks every parameter even when a no-op
        return model if model.device == device else model.to(device)

    def _samples(self, smiles: list[str], features: np.ndarray | None) -> np.ndarray:
        """Raw outputs [members, views, n, T] float64 of valid canonical SMILES: every
        member on the SMILES, or with ``tta`` on them and ``tta`` randomized views;
        ``features`` [n, F] (scaled) are the molecules', the same for every view."""
        from exlm_chem.data.augment import tta_views

        tta = self.tta
        if isinstance(tta, bool) or not isinstance(tta, int | np.integer) or tta < 0:
            raise ValueError(f"tta must be an integer >= 0, got {tta!r}")
        views = tta_views(smiles, int(tta), getattr(self, "seed_", 0)) if tta else [smiles]
        models = [self._on_device(model) for model in self.models_]
        return member_outputs(models, views, 2 * self.batch_size, self.n_tasks_, features)

    def _all_outputs(self, smiles: list[str], features: np.ndarray | None,
                     molecules: list[Any] | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
        """The networks' samples [M, V, n, T] (:meth:`_samples`) and the tree head's raw
        outputs [n, T] (None without one) of valid canonical SMILES; ``molecules``: their
        RDKit molecules from the call's check, which the tree head's descriptors read."""
        samples = self._samples(smiles, features)
        trees = getattr(self, "tree_head_", None)  # absent in pickles from before trees
        if trees is None:
            return samples, None
        if trees.reads_states:
            trees = trees._replace(model=self._on_device(trees.model))  # no walk in place
        return samples, trees.decision(smiles, 2 * self.batch_size, self.n_jobs, molecules)

    def _spread_scale(self, samples: np.ndarray) -> np.ndarray:
        """Samples on the scale their spread is reported in: probabilities, values (on y's
        scale: undoing ``target_transform``; :func:`~exlm_chem.sklearn.ensemble.output_scale`)."""
        return output_scale(samples, self._task, getattr(self, "target_log_", None))

    def _combined(self, samples: np.ndarray, trees: np.ndarray | None) -> np.ndarray:
        """[n, T] on the output scale (probabilities, values) of the networks' samples
        [M, V, n, T] and the tree head's outputs [n, T] (None without one), the trees
        weighing ``tree_weight_`` (:func:`~exlm_chem.sklearn.ensemble.combined`)."""
        # saves and pickles from before the weight have none: one half
        return combined(samples, trees, getattr(self, "tree_weight_", DEFAULT_TREE_WEIGHT),
                        self._task, getattr(self, "target_log_", None))

    def _aggregate(self, samples: np.ndarray, trees: np.ndarray | None) -> np.ndarray:
        """One output [n, T] per molecule: the value (regressor), the logit calibrated by
        ``calibrator_`` when set (classifier) (:func:`~exlm_chem.sklearn.ensemble.aggregate`)."""
        # no weight in older saves and pickles (as in _combined), no calibrator in pickles
        # from before ensembles
        return aggregate(samples, trees, getattr(self, "tree_weight_", DEFAULT_TREE_WEIGHT),
                         self._task, getattr(self, "target_log_", None),
                         getattr(self, "calibrator_", None))

    def _outputs(self, X: Any, on_invalid: str, output: str = PREDICT) -> ModelOutputs:
        return self._outputs_of(self._prepared(X, on_invalid), output)

    def _outputs_of(self, inputs: ModelInputs, output: str = PREDICT) -> ModelOutputs:
        """Outputs [N, T] float64 (:meth:`_aggregate`) or the head's input [N, d + F]
        float32 (of the first member, see :meth:`transform`); NaN rows for bad SMILES,
        whose reasons travel with them."""
        if output == EMBED:
            model = self._on_device(self.model_)
            states = model.run(inputs.smiles, EMBED, 2 * self.batch_size)  # [n_valid, d]
            if inputs.features is not None:  # the head reads them beside the pooled state
                states = np.concatenate([states, inputs.features], axis=1)
            return inputs.scatter(states)
        return inputs.scatter(self._aggregate(*self._all_outputs(
            inputs.smiles, inputs.features, inputs.checked.valid_molecules)))

    def _task_columns(self, values: np.ndarray) -> np.ndarray:
        """[N, T] as the user's y was: [N] for 1-D y."""
        return values if self.multitask_ else values[:, 0]

    def _scored_rows(self, valid: np.ndarray) -> np.ndarray:
        """Rows of an output that can be scored; warns about the others."""
        if not valid.all():
            warnings.warn(f"{int((~valid).sum())} invalid SMILES left out of the score",
                          UserWarning, stacklevel=3)
        return np.flatnonzero(valid)

    def predict_uncertainty(self, X: Any, on_invalid: str = "nan") -> Spread:
        """Per-molecule spread: across members, across SMILES views (``tta``), and of all
        member x view outputs; standard deviations of probabilities (classifier) or values
        (regressor). Each is [N] (1-D ``y``) or [N, n_tasks]; NaN rows for bad SMILES.

        Needs ``n_models > 1`` or ``tta > 0``: a single output has no spread. A source
        with one sample (one member, or no ``tta``) contributes zeros.
        """
        check_is_fitted(self, "model_")
        if len(self.models_) == 1 and not self.tta:
            raise ValueError("predict_uncertainty needs an ensemble (fit with n_models > 1) "
                             "or test-time augmentation (tta > 0)")
        inputs = self._prepared(X, on_invalid)
        _, spread = combine(self._spread_scale(self._samples(inputs.smiles, inputs.features)))
        return Spread(*(self._task_columns(inputs.scatter(values).values) for values in spread))

    def transform(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """What the head reads: the fitted encoder's pooled state and, for a model fitted
        with ``features``, those features as scaled for the head.

        Returns
        -------
        ndarray float32 [N, d + F]
            Columns ``0 .. d-1``: the pooled encoder state of the first member; columns
            ``d ..``: the ``F`` scaled features in the order of
            :meth:`get_feature_names_out` (none without ``features``). NaN rows for
            invalid SMILES, or raise with ``on_invalid="raise"``. X is read as in
            ``predict`` (with ``"columns"``: SMILES first, then them).
        """
        return self._outputs(X, on_invalid, EMBED).values

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

    # ---- saving and pickling (exlm_chem.sklearn.persistence) -------------------------------
    def save(self, path: str | os.PathLike[str]) -> Any:
        """Write the fitted estimator to a directory (atomically): config.json,
        model.safetensors (encoder and head), vocab.txt, metadata.json."""
        return persistence.save_estimator(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Restore an estimator written by :meth:`save` (no unpickling).

        Raises :class:`~exlm_chem.errors.CheckpointError` naming the file for anything
        missing, corrupt or inconsistent, and when ``path`` holds another kind of model.
        """
        return persistence.load_estimator(cls, path)

    def __getstate__(self) -> dict[str, Any]:
        # a copy: object.__getstate__ may hand back the live __dict__
        return persistence.pickled_state(dict(super().__getstate__()))

    def __setstate__(self, state: dict[str, Any]) -> None:
        state, models = persistence.unpickled_state(state)
        super().__setstate__(state)
        if models:
            self.models_ = [self._on_device(model) for model in models]
            self.model_ = self.models_[0]

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
