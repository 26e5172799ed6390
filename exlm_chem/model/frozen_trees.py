"""The estimators' tree head: boosted trees on what the pre-trained encoder already knows.

The trees read the *pre-trained* encoder's pooled state (not the fine-tuned one: that
encoder has seen the training labels, so on training rows its states separate the classes
better than on new molecules and the trees would trust them too much) and RDKit's 2D
descriptors side by side, one boosted model per task
(:class:`~exlm_chem.model.tree_head.TreeHead`). A classifier's tree head may add a random
forest per task on the scaled descriptors alone (:class:`~exlm_chem.model.tree_head.ForestHead`,
the benchmark runner's ``rf_rdkit2d``): its errors differ from the boosted trees', which
read the same pre-trained states as the network (benchmarks/results/tree_weight_cpu). The
head's probability is then the mean of the two members'. The estimators average its
outputs with their fine-tuned networks'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.descriptors import COMPUTED_KINDS
from exlm_chem.data.feature_spec import USER_KIND, FeatureSpec, feature_kinds
from exlm_chem.model.molecule_model import EMBED, MoleculeModel
from exlm_chem.model.tree_head import ForestHead, TreeHead

__all__ = ["DEFAULT_TREE_WEIGHT", "TREE_KINDS", "FrozenTrees", "mean_logit", "tree_kinds"]

# read beside the pooled state; Morgan counts too would make every tree histogram about
# five times wider for a fraction of a point (benchmarks/results/tree_head_cpu)
TREE_KINDS = ("rdkit2d",)


def tree_kinds(tree_features: Any) -> tuple[str, ...]:
    """The estimators' ``tree_features=`` option as the kinds the tree head reads:
    ``"auto"`` -> :data:`TREE_KINDS`, a kind or a list of distinct computed kinds
    (:data:`~exlm_chem.data.descriptors.COMPUTED_KINDS`) as given; anything else raises
    ``ValueError`` (the caller's own columns are the network's, not the trees')."""
    problem = (f"tree_features must be 'auto', one of {COMPUTED_KINDS} or a list of "
               f"distinct ones, got {tree_features!r}")
    if tree_features is None:
        raise ValueError(problem)
    try:
        kinds = feature_kinds(tree_features, auto=TREE_KINDS)
    except ValueError:
        raise ValueError(problem) from None
    if not kinds or USER_KIND in kinds:
        raise ValueError(problem)
    return kinds


#: the trees' share of the estimators' average where nothing chose it: the classifier's
#: default, and the weight of saves from before the estimators chose one
DEFAULT_TREE_WEIGHT = 0.5
# the bounds mean_logit clips to: the double nearest 1 below it, the least normal one
_SMALLEST, _BELOW_ONE = np.finfo(np.float64).tiny, np.nextafter(1.0, 0.0)


class FrozenTrees(NamedTuple):
    """Pre-trained encoder (no head) + scaled molecule features -> boosted trees, and
    optionally a random forest on the scaled features alone."""

    model: MoleculeModel  # the pre-trained encoder and the estimator's pooling, no head
    features: FeatureSpec  # TREE_KINDS, scaled on the training rows
    trees: TreeHead
    forest: ForestHead | None = None  # classification only; None: the boosted trees alone

    @classmethod
    def fit(cls, model: MoleculeModel, states: np.ndarray, raw: np.ndarray,
            labels: np.ndarray, train_rows: np.ndarray, task: str, seed: int,
            kinds: Sequence[str] = TREE_KINDS, forest: bool = False) -> FrozenTrees:
        """Trees fitted on the rows ``train_rows`` of n molecules.

        ``states`` [n, d] are ``model``'s pooled states of the molecules, ``raw`` [n, F]
        their unscaled ``kinds`` features (computed feature kinds of
        :mod:`exlm_chem.data.descriptors`; the estimators read :data:`TREE_KINDS`),
        ``labels`` [n, T] (NaN: missing). The scaler sees the training rows only.
        ``forest`` (classification only): also a random forest per task on the scaled
        features, seeded as the boosted trees (:meth:`ForestHead.fit`).
        """
        if forest and task != "classification":
            raise ValueError(f"the tree head's forest is for classification only, got task "
                             f"{task!r}")
        kinds = tuple(kinds)
        spec = FeatureSpec.fit(kinds, raw, train_rows)
        scaled = spec.scaler.transform(raw[train_rows])  # [n_train, F]
        trees = TreeHead.fit(_side_by_side(states[train_rows], scaled), labels[train_rows],
                             task, seed)
        return cls(model, spec, trees,
                   ForestHead.fit(scaled, labels[train_rows], seed) if forest else None)

    def decision(self, smiles: Sequence[str], batch_size: int, n_jobs: int | None = None,
                 molecules: Sequence[Any] | None = None) -> np.ndarray:
        """Raw outputs [n, T] float64 (logits or values) of valid canonical SMILES; with a
        forest, the logits of the mean of the boosted trees' and the forest's
        probabilities (:func:`mean_logit`). ``molecules``: the SMILES's RDKit molecules
        from the call's check, read by the descriptors instead of parsing the SMILES."""
        states = self.model.run(list(smiles), EMBED, batch_size)  # [n, d]
        return self._decision(states, self.features.values(smiles, None, n_jobs, molecules))

    def decision_of(self, states: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """The same from molecules' states [n, d] and unscaled features [n, F] computed
        already (fit's held-out rows)."""
        return self._decision(states, self.features.scaler.transform(raw))

    def _decision(self, states: np.ndarray, scaled: np.ndarray) -> np.ndarray:
        """:meth:`decision` of states [n, d] and scaled features [n, F]."""
        boosted = self.trees.decision(_side_by_side(states, scaled))
        if self.forest is None:
            return boosted
        return mean_logit(boosted, self.forest.proba(scaled))

    def to(self, device: Any) -> FrozenTrees:
        return self._replace(model=self.model.to(device))


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


def _side_by_side(states: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    return np.concatenate([states, scaled], axis=1)  # [n, d + F]: what the trees read
