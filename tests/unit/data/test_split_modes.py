"""The split protocols by name: each name is the split function it stands for."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data.split_modes import SPLITS, check_split, split_depends_on_seed, split_rows
from exlm_chem.data.splits import scaffold_balanced_split, scaffold_split

SMILES = ["c1ccccc1O", "c1ccccc1N", "C1CCCCC1", "C1CCCCC1C", "CCO", "CCN", "c1ccncc1",
          "c1ccncc1C", "C1CC1", "CC(C)O", "O=C1CCCC1", "N[C@@H](C)C(=O)O"]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_each_name_is_its_split():
    assert _same(split_rows(SMILES, "scaffold", 5), scaffold_split(SMILES))
    assert _same(split_rows(SMILES, "deepchem_scaffold", 5),
                 scaffold_split(SMILES, include_chirality=False))
    assert _same(split_rows(SMILES, "scaffold_balanced", 5),
                 scaffold_balanced_split(SMILES, seed=5))
    assert [s for s in SPLITS if split_depends_on_seed(s)] == ["scaffold_balanced"]


def test_an_unknown_split_is_named_with_the_choices():
    assert check_split("scaffold") == "scaffold"
    with pytest.raises(ValueError, match=r"split must be one of .*got 'random'"):
        split_rows(SMILES, "random", 0)
