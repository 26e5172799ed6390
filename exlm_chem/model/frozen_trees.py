"""The estimators' tree head: boosted trees on what the pre-trained encoder already knows.

The trees read the *pre-trained* encoder's pooled state (not the fine-tuned one: that
encoder has seen the training labels, so on training rows its states separate the classes
better than on new molecules and the trees would trust them too much) and RDKit's 2D
descriptors side by side, one boosted model per task
(:class:`~exlm_chem.model.tree_head.TreeHead`). The estimators average its outputs with
their fine-tuned networks'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.descriptors import FeatureScaler, FeatureSpec, feature_names, rdkit_version
from exlm_chem.model.molecule_model import EMBED, MoleculeModel
from exlm_chem.model.tree_head import TreeHead

__all__ = ["DEFAULT_TREE_WEIGHT", "TREE_KINDS", "FrozenTrees"]

# read beside the pooled state; Morgan counts too would make every tree histogram about
# five times wider for a fraction of a point (benchmarks/results/tree_head_cpu)
TREE_KINDS = ("rdkit2d",)
#: the trees' share of the estimators' average where nothing chose it: the classifier's
#: default, and the weight of saves from before the estimators chose one
DEFAULT_TREE_WEIGHT = 0.5


class FrozenTrees(NamedTuple):
    """Pre-trained encoder (no head) + scaled molecule features -> boosted trees."""

    model: MoleculeModel  # the pre-trained encoder and the estimator's pooling, no head
    features: FeatureSpec  # TREE_KINDS, scaled on the training rows
    trees: TreeHead

    @classmethod
    def fit(cls, model: MoleculeModel, states: np.ndarray, raw: np.ndarray,
            labels: np.ndarray, train_rows: np.ndarray, task: str, seed: int,
            kinds: Sequence[str] = TREE_KINDS) -> FrozenTrees:
        """Trees fitted on the rows ``train_rows`` of n molecules.

        ``states`` [n, d] are ``model``'s pooled states of the molecules, ``raw`` [n, F]
        their unscaled ``kinds`` features (computed feature kinds of
        :mod:`exlm_chem.data.descriptors`; the estimators read :data:`TREE_KINDS`),
        ``labels`` [n, T] (NaN: missing). The scaler sees the training rows only.
        """
        kinds = tuple(kinds)
        spec = FeatureSpec(kinds, {k: feature_names(k) for k in kinds},
                           FeatureScaler.fit(raw[train_rows]), rdkit_version())
        x = _side_by_side(states[train_rows], spec.scaler.transform(raw[train_rows]))
        return cls(model, spec, TreeHead.fit(x, labels[train_rows], task, seed))

    def decision(self, smiles: Sequence[str], batch_size: int,
                 n_jobs: int | None = None) -> np.ndarray:
        """Raw outputs [n, T] float64 (logits or values) of valid canonical SMILES."""
        states = self.model.run(list(smiles), EMBED, batch_size)  # [n, d]
        return self.trees.decision(_side_by_side(states,
                                                 self.features.values(smiles, None, n_jobs)))

    def decision_of(self, states: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """The same from molecules' states [n, d] and unscaled features [n, F] computed
        already (fit's held-out rows)."""
        return self.trees.decision(_side_by_side(states, self.features.scaler.transform(raw)))

    def to(self, device: Any) -> FrozenTrees:
        return self._replace(model=self.model.to(device))


def _side_by_side(states: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    return np.concatenate([states, scaled], axis=1)  # [n, d + F]: what the trees read
