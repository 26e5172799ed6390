"""The estimators' tree head: boosted trees on molecule features, fitted beside the network.

By default the trees are MapLight's (the leading fingerprint entry of the TDC ADMET
leaderboard): CatBoost (:class:`~exlm_chem.model.tree_head.BoostedHead`) on Morgan counts
(1024 entries), Avalon counts, ErG and RDKit's 2D descriptors, raw. The trees may also read
the *pre-trained* encoder's pooled state (the kind :data:`STATES_KIND` in
``tree_features``; not the fine-tuned one: that encoder has seen the training labels, so
on training rows its states separate the classes better than on new molecules and the
trees would trust them too much), and the booster may be scikit-learn's histogram
boosting (:class:`~exlm_chem.model.tree_head.TreeHead`, which reads the features scaled).
A classifier's tree head may add a random forest per task on the scaled features alone
(:class:`~exlm_chem.model.tree_head.ForestHead`, the benchmark runner's ``rf_rdkit2d``);
the head's probability is then the mean of the two members'. The estimators average its
outputs with their fine-tuned networks'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.descriptors import COMPUTED_KINDS
from exlm_chem.data.feature_spec import FeatureSpec, raw_features
from exlm_chem.model.molecule_model import EMBED, MoleculeModel
from exlm_chem.model.tree_head import BOOSTERS, BoostedHead, ForestHead, TreeHead

__all__ = ["CATBOOST_MAX_TASKS", "DEFAULT_TREE_WEIGHT", "HIST_TREE_KINDS", "STATES_KIND",
           "TREE_KINDS", "FrozenTrees", "mean_logit", "tree_booster", "tree_kinds"]

#: MapLight's feature sets: what ``tree_features="auto"`` reads beside CatBoost
TREE_KINDS = ("morgan1024", "avalon", "erg", "rdkit2d")
#: the pre-trained encoder's pooled state as a kind the trees may read
STATES_KIND = "exlm"
#: what ``tree_features="auto"`` reads beside histogram boosting (0.4.x's tree head)
HIST_TREE_KINDS = (STATES_KIND, "rdkit2d")
#: ``tree_booster="auto"`` fits CatBoost for at most this many tasks, histogram boosting
#: beyond: one CatBoost model per task costs a ToxCast fit hours
CATBOOST_MAX_TASKS = 4


def tree_booster(booster: str, n_tasks: int) -> str:
    """The booster ``tree_booster=`` names for a fit of ``n_tasks`` tasks: ``"auto"`` ->
    ``"catboost"`` up to :data:`CATBOOST_MAX_TASKS` tasks, else ``"hist"``; the others as
    given (:data:`~exlm_chem.model.tree_head.BOOSTERS`; anything else is a ValueError)."""
    if booster == "auto":
        return "catboost" if n_tasks <= CATBOOST_MAX_TASKS else "hist"
    if booster not in BOOSTERS:
        raise ValueError(f"tree_booster must be 'auto' or one of {BOOSTERS}, got {booster!r}")
    return booster


def tree_kinds(tree_features: Any, booster: str = "catboost") -> tuple[str, ...]:
    """The estimators' ``tree_features=`` option as the kinds the tree head reads:
    ``"auto"`` -> :data:`TREE_KINDS` beside CatBoost, :data:`HIST_TREE_KINDS` beside the
    ``"hist"`` booster; a kind or a list of distinct kinds of
    :data:`~exlm_chem.data.descriptors.COMPUTED_KINDS` and :data:`STATES_KIND` as given;
    anything else raises ``ValueError`` (the caller's own columns are the network's, not
    the trees')."""
    allowed = (STATES_KIND, *COMPUTED_KINDS)
    problem = (f"tree_features must be 'auto', one of {allowed} or a list of distinct "
               f"ones, got {tree_features!r}")
    if isinstance(tree_features, str):
        auto = HIST_TREE_KINDS if booster == "hist" else TREE_KINDS
        kinds = auto if tree_features == "auto" else (tree_features,)
    elif isinstance(tree_features, list | tuple):
        kinds = tuple(tree_features)
    else:
        raise ValueError(problem)
    if (not kinds or len(set(kinds)) != len(kinds)
            or not all(isinstance(k, str) and k in allowed for k in kinds)):
        raise ValueError(problem)
    return kinds


#: the trees' share of the estimators' average where nothing chose it (no held-out
#: molecules), and the weight of saves from before the estimators chose one
DEFAULT_TREE_WEIGHT = 0.5
# the bounds mean_logit clips to: the double nearest 1 below it, the least normal one
_SMALLEST, _BELOW_ONE = np.finfo(np.float64).tiny, np.nextafter(1.0, 0.0)


class FrozenTrees(NamedTuple):
    """Molecule features (and the pre-trained encoder's states) -> boosted trees, and
    optionally a random forest on the scaled features alone."""

    model: MoleculeModel | None  # the pre-trained encoder, no head (None: states not read)
    features: FeatureSpec  # the computed kinds, scaler fitted on the training rows
    trees: BoostedHead | TreeHead
    forest: ForestHead | None = None  # classification only; None: the boosted trees alone
    reads_states: bool = False  # the trees read [states, features] side by side

    @classmethod
    def fit(cls, model: MoleculeModel | None, states: np.ndarray | None, raw: np.ndarray,
            labels: np.ndarray, train_rows: np.ndarray, task: str, seed: int,
            kinds: Sequence[str] = TREE_KINDS, forest: bool = False,
            booster: str = "catboost", threads: int = 1,
            booster_params: dict[str, Any] | None = None) -> FrozenTrees:
        """Trees fitted on the rows ``train_rows`` of n molecules.

        ``states`` [n, d] are ``model``'s pooled states of the molecules (None: the trees
        do not read them), ``raw`` [n, F] their unscaled ``kinds`` features (computed kinds
        of :mod:`exlm_chem.data.descriptors`), ``labels`` [n, T] (NaN: missing). The scaler
        sees the training rows only; CatBoost (``booster="catboost"``) reads the raw
        values, histogram boosting (``"hist"``) and the forest the scaled ones.
        ``forest`` (classification only): also a random forest per task on the scaled
        features, seeded as the boosted trees (:meth:`ForestHead.fit`). ``threads`` and
        ``booster_params`` (settings beside MapLight's): CatBoost's.
        """
        if forest and task != "classification":
            raise ValueError(f"the tree head's forest is for classification only, got task "
                             f"{task!r}")
        if booster not in BOOSTERS:
            raise ValueError(f"the tree head's booster must be one of {BOOSTERS}, got "
                             f"{booster!r}")
        kinds = tuple(kinds)
        spec = FeatureSpec.fit(kinds, raw, train_rows)
        scaled = spec.scaler.transform(raw[train_rows])  # [n_train, F]
        part = None if states is None else states[train_rows]
        if booster == "catboost":
            trees = BoostedHead.fit(_side_by_side(part, raw[train_rows]), labels[train_rows],
                                    task, seed, threads, booster_params)
        elif booster_params:
            raise ValueError(f"booster_params are CatBoost's, got {booster_params!r} for "
                             "the hist booster")
        else:
            trees = TreeHead.fit(_side_by_side(part, scaled), labels[train_rows], task, seed)
        return cls(None if states is None else model, spec, trees,
                   ForestHead.fit(scaled, labels[train_rows], seed) if forest else None,
                   reads_states=states is not None)

    def decision(self, smiles: Sequence[str], batch_size: int, n_jobs: int | None = None,
                 molecules: Sequence[Any] | None = None) -> np.ndarray:
        """Raw outputs [n, T] float64 (logits or values) of valid canonical SMILES; with a
        forest, the logits of the mean of the boosted trees' and the forest's
        probabilities (:func:`mean_logit`). ``molecules``: the SMILES's RDKit molecules
        from the call's check, read by the descriptors instead of parsing the SMILES."""
        states = (self.model.run(list(smiles), EMBED, batch_size)  # [n, d]
                  if self.reads_states else None)
        raw = raw_features(self.features.kinds, smiles, None, n_jobs, molecules)  # [n, F]
        return self._decision(states, raw)

    def decision_of(self, states: np.ndarray | None, raw: np.ndarray) -> np.ndarray:
        """The same from molecules' states [n, d] (None, or ignored, when the trees do not
        read them) and unscaled features [n, F] computed already (fit's held-out rows)."""
        return self._decision(states if self.reads_states else None, raw)

    def _decision(self, states: np.ndarray | None, raw: np.ndarray) -> np.ndarray:
        """:meth:`decision` of states [n, d] (or None) and unscaled features [n, F]."""
        scaled = (self.features.scaler.transform(raw)
                  if self.forest is not None or self.trees.booster == "hist" else None)
        read = raw if self.trees.booster == "catboost" else scaled
        boosted = self.trees.decision(_side_by_side(states, read))
        if self.forest is None:
            return boosted
        return mean_logit(boosted, self.forest.proba(scaled))

    def to(self, device: Any) -> FrozenTrees:
        return self if self.model is None else self._replace(model=self.model.to(device))


def mean_logit(logits: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """The logits [n, T] of the mean of probabilities ``sigmoid(logits)`` [n, T] and
    ``proba`` [n, T].

    The mean is clipped into (0, 1) only by what keeps its logit finite: to the largest
    double below 1 and the smallest normal one (a forest of pure leaves beside confident
    trees gives 1 or 0 exactly).
    """
    from scipy.special import expit

    mean = np.clip((expit(logits) + proba) / 2, _SMALLEST, _BELOW_ONE)
    # log1p(-mean): 1 - mean is exact near 1, where the trees are surest
    return np.log(mean) - np.log1p(-mean)


def _side_by_side(states: np.ndarray | None, features: np.ndarray) -> np.ndarray:
    """What the trees read: [n, d + F] states and features, or [n, F] without states."""
    return features if states is None else np.concatenate([states, features], axis=1)
