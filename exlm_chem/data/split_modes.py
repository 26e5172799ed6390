"""The split protocols by name: what ``--split`` offers and which rows each one holds out.

The benchmark evaluates on these splits and corpus hygiene keeps their valid and test
molecules out of pre-training, so both read them here.
"""

from __future__ import annotations

from collections.abc import Sequence

from exlm_chem.data.splits import SplitIndices, scaffold_balanced_split, scaffold_split

#: scaffold: the paper's protocol (Uni-Mol/GEM, deterministic, chirality in scaffolds);
#: deepchem_scaffold: DeepChem's ScaffoldSplitter exactly (no chirality);
#: scaffold_balanced: chemprop's seeded balanced scaffold split (the seed moves the split).
SPLITS = ("scaffold", "deepchem_scaffold", "scaffold_balanced")


#: Splits drawn anew for each seed: scaffold_balanced, and tdc_scaffold (the TDC ADMET
#: group's per-seed re-split of train_val, :mod:`exlm_chem.benchmark.tdc`).
SEEDED_SPLITS = ("scaffold_balanced", "tdc_scaffold")


def split_depends_on_seed(split: str) -> bool:
    """Whether ``split`` moves with its seed (the scaffold splits are deterministic)."""
    return split in SEEDED_SPLITS


def check_split(split: str) -> str:
    """``split`` if it is one of :data:`SPLITS`, else a ``ValueError`` naming them."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def split_rows(smiles: Sequence[str], split: str, seed: int) -> SplitIndices:
    """``smiles`` split 80/10/10 by the protocol named ``split`` (one of :data:`SPLITS`)."""
    if check_split(split) == "scaffold":
        return scaffold_split(smiles)
    if split == "deepchem_scaffold":
        return scaffold_split(smiles, include_chirality=False)
    return scaffold_balanced_split(smiles, seed=seed)
