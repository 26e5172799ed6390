"""Randomized SMILES: many valid strings of one molecule, drawn reproducibly.

A randomized SMILES is RDKit's non-canonical SMILES of the molecule with its atoms
renumbered by a random permutation. The permutation comes from a NumPy generator, so
the strings depend only on the seed (not on RDKit's global random state) and the same
seed gives the same strings on every machine with the same RDKit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.rdkit_reasons import quiet_mol

__all__ = ["AugmentedEpoch", "EpochViews", "randomized_smiles", "tta_views"]

#: Added to a seed for test-time views, so they never repeat the training draws.
TTA_STREAM = 7919


def randomized_smiles(mol: Any, rng: np.random.Generator, fallback: str) -> str:
    """One randomized SMILES of an RDKit ``mol``; ``fallback`` when RDKit cannot write it
    (or when ``mol`` is None), so a row is never lost."""
    from rdkit import Chem

    if mol is None or mol.GetNumAtoms() < 2:
        return fallback
    order = rng.permutation(mol.GetNumAtoms()).tolist()
    try:
        return Chem.MolToSmiles(Chem.RenumberAtoms(mol, order), canonical=False)
    except (RuntimeError, ValueError):  # e.g. a kekulisation failure on writing
        return fallback


class AugmentedEpoch(NamedTuple):
    smiles: list[str]  # [N * (1 + n)] the given SMILES, then n randomized blocks
    rows: np.ndarray  # [N * (1 + n)] int64: the source molecule of each string


class EpochViews:
    """Training views of one set of SMILES, drawn afresh for every epoch.

    Epoch ``e`` holds the given strings plus ``n`` randomized SMILES of every molecule,
    drawn from a generator seeded by ``(seed, e)``: reproducible, different per epoch.
    Molecules are parsed once, here.
    """

    def __init__(self, smiles: Sequence[str], n: int, seed: int) -> None:
        if any(not isinstance(s, str) for s in smiles):
            raise TypeError("SMILES augmentation needs SMILES strings, not token id rows")
        self.smiles, self.n, self.seed = list(smiles), int(n), int(seed)
        self.mols = [quiet_mol(s) for s in self.smiles] if self.n else []

    def __len__(self) -> int:
        return len(self.smiles) * (1 + self.n)

    def epoch(self, epoch: int) -> AugmentedEpoch:
        rng = np.random.default_rng([self.seed, epoch])
        out = list(self.smiles)
        pairs = list(zip(self.mols, self.smiles, strict=True))
        for _ in range(self.n):
            out += [randomized_smiles(m, rng, s) for m, s in pairs]
        rows = np.tile(np.arange(len(self.smiles), dtype=np.int64), 1 + self.n)
        return AugmentedEpoch(out, rows)


def tta_views(smiles: Sequence[str], n: int, seed: int) -> list[list[str]]:
    """``1 + n`` views of valid SMILES: the RDKit canonical strings, then ``n`` randomized
    ones per molecule (view ``v`` seeded by ``(seed + TTA_STREAM, v)``)."""
    from rdkit import Chem

    mols = [quiet_mol(s) for s in smiles]
    pairs = list(zip(mols, smiles, strict=True))
    views = [[Chem.MolToSmiles(m) if m is not None else s for m, s in pairs]]
    for v in range(1, n + 1):
        rng = np.random.default_rng([seed + TTA_STREAM, v])
        views.append([randomized_smiles(m, rng, s) for m, s in pairs])
    return views
