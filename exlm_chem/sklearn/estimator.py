"""scikit-learn estimators that fine-tune a pre-trained ExLM model on SMILES.

>>> from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier  # doctest: +SKIP
>>> clf = ExLMMoleculeClassifier(epochs=20, random_state=0).fit(smiles, y)  # doctest: +SKIP
>>> clf.predict_proba(["CCO", "c1ccccc1O"])  # doctest: +SKIP

Both estimators follow the scikit-learn contract (``get_params``/``set_params``,
``clone``, pipelines, grid search, pickling) with X a sequence of SMILES strings.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from exlm_chem.metrics import mean_r2, mean_roc_auc
from exlm_chem.sklearn.base import ExLMEstimatorBase
from exlm_chem.sklearn.inputs import Targets, classification_targets, regression_targets
from exlm_chem.uncertainty.conformal import Interval, conformal_quantile

__all__ = ["ExLMMoleculeClassifier", "ExLMMoleculeRegressor", "Interval"]

_PARAMETERS = """
    Parameters
    ----------
    pretrained : str, path or None, default "default"
        Checkpoint directory to start from. ``"default"``: ``$EXLM_CHEM_MODEL`` if set,
        else the shipped ``models/exlm-small`` (a clear error says where to put one when
        neither exists). ``None``: a randomly initialised model of ``preset``.
    preset : {"tiny", "small", "base"}, default "small"
        Model size when ``pretrained=None``.
    epochs, batch_size, lr, warmup_ratio, dropout, pooler_dropout, weight_decay, clip_norm
        Fine-tuning settings (see :class:`exlm_chem.presets.FinetuneSettings`; the paper's
        per-task values come from ``finetune_preset(name)``, whose fields match these).
        ``dropout`` replaces the checkpoint's encoder dropout.
    validation_fraction : float, default 0.1
        Share of the training molecules held out, as whole Bemis-Murcko scaffolds in a
        seeded order (at random where one scaffold holds most of the molecules), to
        choose the best epoch and the trees' weight; 0 keeps the last epoch.
    patience : int or None, default 5
        Stop when the score on that held-out share has not improved for this many epochs
        (``epochs`` stays the cap); None trains every epoch.
    pooling : {"bos", "mean"}, default "mean"
        Molecule vector: the mean over tokens, or the first BOS copy (the paper).
    max_length : int, default 256
        Tokens per molecule including BOS/EOS; longer SMILES are truncated.
    random_state : int, RandomState or None
        Seeds the validation split, head initialisation, dropout and batch order; the
        same value gives identical predictions on the CPU. Torch's global generator is
        left untouched.
    device : str, default "auto"
        ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda:0"``, ...
    on_invalid : {"raise", "drop"}, default "raise"
        Bad SMILES in ``fit``: raise one error listing every bad row and why, or leave
        them out with a warning (``fit_invalid_mask_``). Prediction methods take their
        own ``on_invalid`` argument: ``"nan"`` (default; NaN rows) or ``"raise"``.
    max_minutes : float or None
        Wall-time budget of ``fit``; training stops after the step that exceeds it.
    progress : bool, default False
        Show a progress bar over epochs.
    augment : int, default 0
        SMILES augmentation: every epoch trains on the given SMILES plus ``augment``
        randomized SMILES per molecule (RDKit, drawn afresh per epoch, seeded).
    tta : int, default 0
        Test-time augmentation: outputs are averaged over the canonical SMILES and ``tta``
        randomized ones (seeded by the fit's seed, so predictions repeat). A prediction
        setting: it may be changed after ``fit``.
    n_models : int, default 1
        Ensemble size: members differ in seed (head initialisation, dropout, batch order);
        the first member is the model ``n_models=1`` would give. Outputs are the mean over
        members (probabilities for the classifier). ``max_minutes`` applies per member.
    bootstrap : bool, default False
        Each member trains on a bootstrap sample of the training molecules.
    calibrate : {None, "isotonic", "platt"}, default None
        Classifier only: map the ensemble's probabilities through a per-task calibration
        fitted on the validation molecules (the ones that also chose the best epoch).
    features : "auto", None, str or list of str, default "auto"
        Per-molecule features concatenated to the pooled encoder state before the head
        (the chemprop + RDKit recipe). ``"auto"``: the estimator's measured default
        (``AUTO_FEATURES``, chosen in benchmarks/results): ``"rdkit2d"`` for the
        regressor, none for the classifier. None: none. Otherwise ``"rdkit2d"``
        (RDKit's 2D descriptors), ``"morgan"`` (Morgan counts, radius 2, 2048 entries),
        ``"columns"`` (your own: X is then a DataFrame or 2-D array whose first column
        holds the SMILES and whose other columns hold numbers), or a list of these. They
        are scaled by a robust standardisation fitted on the training rows (median, IQR),
        missing values (NaN, inf, or a descriptor RDKit cannot compute) become 0 (the
        median), and values are clipped to ±5 (:mod:`exlm_chem.data.descriptors`); each
        distinct molecule is computed once per call. Saved with the model. ``transform``
        returns the pooled state followed by these scaled features: what the head reads.
    n_jobs : int or None, default None
        Processes computing ``features``; None or -1: every core this process may use
        (fewer than 400 distinct molecules for RDKit 2D, 2000 for the other kinds, are
        computed in-process).
    tree_head : bool, default True
        Beside the fine-tuned network, fit boosted trees, one model per task, on molecule
        features of the training molecules (``tree_features``, ``tree_booster``); outputs
        are the weighted average of the two (the classifier's of log-odds, the
        regressor's of values; ``tree_weight``). False: the network alone.
    tree_weight : "auto", float in [0, 1], tuple of them, or None, default "auto"
        The trees' weight in that average (0: the network alone, 1: the trees alone).
        ``"auto"``: 0.75, what TDC ADMET's held-out valid parts chose over the trees
        alone, one half and the held-out choices below; for a classifier with CatBoost
        trees and at least 400 held-out molecules, ``(0.75, 1.0)``: there that choice is
        ahead of 0.75 on TDC's valid parts (Ames, CYP inhibition), on fewer molecules
        or beside the many-task histogram boosting it is behind
        (benchmarks/results/tdc_admet/weights.md). A tuple: the weight of those that
        scores best on the held-out molecules (log loss of the mixed probabilities;
        squared error of the averaged values, on the scale fit works on), the first of
        them without held-out molecules; ``(0.75, 1.0)`` keeps the network's quarter
        unless the held-out molecules say the trees do better alone. None: the same
        choice from 0, 0.25, 0.5, 0.75 and 1, one half without held-out molecules. A
        choice fits the trees once more, without the held-out molecules, to score them;
        CatBoost's kept trees are fitted on every molecule whatever the weight. The
        weight used is ``tree_weight_``.
    tree_forest : bool or None, default None
        With ``tree_head``, the tree head adds a random forest per task on the scaled
        tree features alone (100 trees, balanced class weights, fitted on the molecules
        labelled for the task), and its probability is the mean of the boosted trees'
        and the forest's. None: on beside a classifier's histogram boosting (its measured
        default of 0.3.0), off beside CatBoost (MapLight uses it alone) and for the
        regressor, where True is refused (not measured there). Saved as arrays.
    tree_features : "auto", str or list of str, default "auto"
        What the tree head reads. ``"auto"``: beside CatBoost MapLight's sets, Morgan
        counts (radius 2, 1024 entries, ``"morgan1024"``), Avalon counts (``"avalon"``),
        ErG (``"erg"``) and RDKit's 2D descriptors (``"rdkit2d"``); beside histogram
        boosting 0.4.x's, the pre-trained encoder's pooled state (``"exlm"``) and RDKit's
        2D descriptors. Otherwise kinds as for ``features`` (also ``"morgan"``,
        ``"rdkit2d_fast"``) and ``"exlm"``. CatBoost reads the values raw; histogram
        boosting and the forest read them scaled on the training rows like ``features``.
    tree_booster : {"auto", "catboost", "hist"}, default "auto"
        The trees: CatBoost at MapLight's settings (1,000 oblivious trees of depth 6,
        ``random_strength=2``; for the regressor the mean of an ``MAE`` and an ``RMSE``
        model on a standardised target, where MapLight fits ``MAE`` alone), or
        scikit-learn's histogram gradient boosting at its defaults (0.4.x's). ``"auto"``:
        CatBoost for up to 4 tasks, histogram boosting for more (a CatBoost model per
        task would cost a ToxCast fit hours). CatBoost fits on as many threads as
        ``--threads`` / ``$EXLM_CHEM_THREADS`` allow; both are saved as arrays and
        predicted with numpy (loading needs neither library).
    tree_params : dict or None, default None
        CatBoost settings beside MapLight's, e.g. ``{"iterations": 300, "depth": 8}``
        (``loss_function="MAE"``, MapLight's, or ``"RMSE"`` fits the regressor's trees
        with that loss alone); not the seed, threads or logging, which fit sets. Read
        where the booster is CatBoost.
    head_first : bool, default True
        LP-FT: before fine-tuning, train the head alone on the pre-trained encoder's
        pooled states (its best step on the held-out molecules is kept), so the encoder
        is fine-tuned under a head that already reads it rather than a random one.
    train_layers : int or None, default 3
        Fine-tune only the top ``train_layers`` encoder blocks (and the head); the token
        embedding and the blocks below keep their pre-trained weights and backward passes
        stop above them (an encoder of fewer blocks is fine-tuned whole). None: every block.
    target_transform : {"auto", "log", None}, default "auto"
        Regressor: ``"auto"`` fits every member and tree on the natural log of the tasks
        whose values are all positive and skewed (skewness above 1, reduced by the log:
        half-lives, volumes of distribution, clearances), each choice logged at INFO and
        kept in ``target_log_``; ``"log"``: every task (all values must be positive);
        None: ``y`` as given. Predictions, intervals and ``score`` are on ``y``'s own
        scale. "auto" was chosen on the validation parts of the TDC ADMET tasks
        (benchmarks/results/tdc_admet). The classifier's classes are never transformed
        ("log" is refused).
"""

_ATTRIBUTES = """
    Attributes
    ----------
    n_tasks_ : int
    multitask_ : bool
        Whether ``y`` was 2-D (one column per task, NaN = missing).
    task_names_ : list of str or None
        Column names when ``y`` was a DataFrame.
    model_ : MoleculeModel
        Fine-tuned encoder and head (with the feature transform of ``features``).
    config_ : ExLMConfig
    tokenizer_ : SmilesTokenizer
    history_ : list of EpochRecord
        Per epoch: training loss, validation loss and score, learning rate, seconds.
    best_epoch_ : int
        Epoch whose weights were kept (0: no training happened).
    best_score_ : float
    selection_metric_ : str
        How the best epoch was chosen: "roc_auc", "valid_loss", "rmse" or "last_epoch".
    stopped_early_ : bool
        The ``max_minutes`` budget ran out.
    fit_invalid_mask_ : ndarray of bool [N_fit]
        Rows of the training X left out as invalid (``on_invalid="drop"``).
    fit_invalid_reasons_ : list of str or None, [N_fit]
        Why each of those rows was rejected (None for the others).
    held_out_mask_ : ndarray of bool [N_fit]
        Rows of the training X held out of training (``validation_fraction``, whole
        scaffolds): they chose the best epoch (and ``tree_weight_`` with
        ``tree_weight=None``), calibration and intervals.
    pretrained_source_ : str
        The checkpoint fine-tuned from, or ``"random:<preset>"``.
    models_ : list of MoleculeModel
        The ensemble's members (``model_`` is the first); ``history_`` and the best-epoch
        attributes describe the first member.
    seed_ : int
        The seed drawn from ``random_state`` (member seeds and ``tta`` views derive from it).
    feature_spec_ : FeatureSpec or None
        The ``features`` the head reads: kinds, column names and the fitted scaler.
    tree_weight_ : float
        The tree head's weight in the average (see ``tree_weight``).
    target_log_ : ndarray of bool [n_tasks]
        Regressor: the tasks fitted on log(y) (``target_transform``).
    tree_head_ : FrozenTrees or None
        The tree head (``tree_head=True``): the pre-trained encoder, the scaled features,
        the trees and the forest of ``tree_forest`` (:mod:`exlm_chem.model.frozen_trees`).
"""


class ExLMMoleculeClassifier(ClassifierMixin, ExLMEstimatorBase):
    __doc__ = f"""Binary or multi-task molecule classifier fine-tuned from ExLM.

    ``y`` is 1-D (binary: any two label values, in ``classes_``, none missing) or 2-D
    (multi-task: one 0/1 column per task, NaN where a label is missing). Outputs follow:
    for 1-D ``y``, ``predict_proba`` is [N, 2] (columns in ``classes_`` order) and
    ``decision_function`` is [N]; for 2-D ``y`` both are [N, n_tasks] (positive-class
    probabilities / logits per task), as for scikit-learn multilabel classifiers.
    ``score`` is the mean ROC-AUC over tasks (not accuracy).
{_PARAMETERS}{_ATTRIBUTES}
    classes_ : ndarray
        1-D ``y``: the two labels (negative, positive). 2-D ``y``: ``arange(n_tasks)``
        (the multilabel convention).
    """

    _task = "classification"

    def _targets(self, y: Any, n: int) -> Targets:
        return classification_targets(y, n)

    def _set_targets(self, targets: Targets) -> None:
        n_tasks = targets.labels.shape[1]
        self.classes_ = targets.classes if targets.classes is not None else np.arange(n_tasks)

    def _fitted_metadata(self) -> dict[str, Any]:
        return {"classes_": self.classes_.tolist(), "classes_dtype": self.classes_.dtype.str}

    def _restore_metadata(self, fitted: dict[str, Any]) -> None:
        self.classes_ = np.asarray(fitted["classes_"], dtype=np.dtype(fitted["classes_dtype"]))

    def decision_function(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """Logits: [N] for binary ``y``, [N, n_tasks] for multi-task; NaN rows if invalid.

        With an ensemble, ``tta`` or calibration: the logit of :meth:`predict_proba`.
        """
        return self._task_columns(self._outputs(X, on_invalid).values)  # [N, T] float64

    def predict_proba(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """[N, 2] (binary) or [N, n_tasks] positive probabilities; NaN rows if invalid."""
        from scipy.special import expit

        p = expit(self.decision_function(X, on_invalid))
        return p if self.multitask_ else np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably from the logits."""
        from scipy.special import log_expit

        z = self.decision_function(X, on_invalid)
        return log_expit(z) if self.multitask_ else np.column_stack([log_expit(-z),
                                                                     log_expit(z)])

    def predict(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """Labels from ``classes_`` (binary) or 0/1 per task (float [N, n_tasks]).

        Invalid rows are NaN (numeric labels, as float) or None (other labels, as object).
        """
        z = self.decision_function(X, on_invalid)
        invalid, positive = np.isnan(z), (z > 0).astype(np.int64)
        if self.multitask_:
            return np.where(invalid, np.nan, positive.astype(np.float64))
        labels = self.classes_[positive]
        if not invalid.any():
            return labels
        numeric = self.classes_.dtype.kind in "biuf"
        labels = labels.astype(np.float64 if numeric else object)
        labels[invalid] = np.nan if numeric else None
        return labels

    def score(self, X: Any, y: Any, sample_weight: None = None) -> float:
        """Mean ROC-AUC over tasks with both classes (invalid SMILES left out, warned)."""
        if sample_weight is not None:
            raise NotImplementedError("sample_weight is not supported")
        outputs = self._outputs(X, "nan")
        z = self._task_columns(outputs.values)
        y = np.asarray(y)
        if y.shape != z.shape:
            raise ValueError(f"y must have shape {z.shape} for this estimator, got {y.shape}")
        if self.multitask_:
            labels = y.astype(np.float64)
        else:
            unknown = ~np.isin(y, self.classes_)
            if unknown.any():
                raise ValueError(f"y has labels outside classes_ {self.classes_.tolist()} "
                                 f"at rows {np.flatnonzero(unknown)[:10].tolist()}")
            labels = (y == self.classes_[1]).astype(np.float64)
        rows = self._scored_rows(outputs.valid)
        scores = mean_roc_auc(labels[rows], z[rows])
        single = np.isnan(scores.per_task)
        if single.any():
            outcome = "the score is NaN" if single.all() else "they are left out of the mean"
            warnings.warn(f"{int(single.sum())} of {single.size} task(s) have a single class "
                          f"among the scored rows of y, so ROC-AUC is undefined for them; "
                          f"{outcome}", UserWarning, stacklevel=2)
        return scores.mean

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.multi_label = True
        return tags


class ExLMMoleculeRegressor(RegressorMixin, ExLMEstimatorBase):
    __doc__ = f"""Single- or multi-task molecule regressor fine-tuned from ExLM.

    ``y`` is 1-D (finite values) or 2-D (one column per task, NaN = missing). Targets are
    standardised per task for training; ``predict`` returns the original units: [N] for
    1-D ``y``, [N, n_tasks] for 2-D, NaN rows for invalid SMILES. ``score`` is R^2
    (mean over tasks, on labelled rows). Best epoch: lowest validation RMSE.
{_PARAMETERS}{_ATTRIBUTES}"""

    _task = "regression"
    AUTO_FEATURES = ("rdkit2d",)  # benchmarks/results/regression_scaffold

    def _targets(self, y: Any, n: int) -> Targets:
        return regression_targets(y, n)

    def _fitted_metadata(self) -> dict[str, Any]:
        return {"target_log_": self.target_log_.tolist()}

    def _restore_metadata(self, fitted: dict[str, Any]) -> None:
        # a save from before target_transform (0.3.0) fitted y as given
        self.target_log_ = np.asarray(fitted.get("target_log_", [False] * fitted["n_tasks_"]),
                                      dtype=bool)

    def predict(self, X: Any, on_invalid: str = "nan") -> np.ndarray:
        """Predicted values: [N] or [N, n_tasks]; NaN rows for invalid SMILES."""
        return self._task_columns(self._outputs(X, on_invalid).values)  # [N, T] float64

    def score(self, X: Any, y: Any, sample_weight: None = None) -> float:
        """R^2, averaged over tasks on labelled rows (invalid SMILES left out, warned)."""
        if sample_weight is not None:
            raise NotImplementedError("sample_weight is not supported")
        outputs = self._outputs(X, "nan")
        predictions = self._task_columns(outputs.values)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != predictions.shape:
            raise ValueError(f"y must have shape {predictions.shape} for this estimator, "
                             f"got {y.shape}")
        rows = self._scored_rows(outputs.valid)
        return mean_r2(y[rows], predictions[rows]).mean

    def predict_interval(self, X: Any, alpha: float = 0.1,
                         on_invalid: str = "nan") -> Interval:
        """Split-conformal interval ``predict(X) ± q`` with coverage ``>= 1 - alpha``.

        ``q`` (per task) is the finite-sample corrected quantile of the absolute residuals
        on the validation molecules (:mod:`exlm_chem.uncertainty.conformal`), computed in
        ``fit`` with the ``tta`` of that time; too few of them for ``alpha`` give unbounded
        intervals. NaN rows for bad SMILES. The coverage holds for molecules exchangeable
        with the held-out ones; on a new chemical series it can fall short.
        """
        check_is_fitted(self, "model_")
        if self.conformity_scores_ is None:
            raise ValueError("predict_interval needs validation molecules: fit with "
                             "validation_fraction > 0")
        q = np.array([conformal_quantile(s, alpha) for s in self.conformity_scores_])  # [T]
        pred = self.predict(X, on_invalid)
        half = q if self.multitask_ else q[0]
        return Interval(pred - half, pred + half)
