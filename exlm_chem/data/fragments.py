"""BRICS fragments as groups of token positions, for the fragment-masking scheme.

RDKit numbers atoms in the order they appear in the SMILES, so the i-th atom token of a
tokenised SMILES is atom i. Cutting the molecule's BRICS bonds leaves fragments; each
fragment becomes the list of its atoms' token positions (in ``[BOS ... EOS]`` ids).
"""

from __future__ import annotations

import re

import numpy as np

from exlm_chem.data.rdkit_reasons import quiet_mol
from exlm_chem.data.tokenizer import SmilesTokenizer

_ATOM_TOKEN = re.compile(r"^(\[.+\]|Br|Cl|B|C|N|O|P|S|F|I|b|c|n|o|s|p|\*)$")


def fragment_token_groups(
    smiles: str, tokenizer: SmilesTokenizer, n_ids: int | None = None
) -> list[np.ndarray]:
    """Token positions of each BRICS fragment of ``smiles`` (empty list if unparsable).

    ``n_ids`` is the length of the (possibly truncated) ``[BOS ... EOS]`` id sequence;
    positions that truncation removed are dropped.
    """
    from rdkit.Chem import BRICS

    mol = quiet_mol(smiles)
    if mol is None:
        return []
    tokens = tokenizer.tokenize(smiles)
    atom_positions = [i + 1 for i, t in enumerate(tokens) if _ATOM_TOKEN.match(t)]  # +1: BOS
    if len(atom_positions) != mol.GetNumAtoms():
        return []  # e.g. explicit [H] atoms RDKit merged: fall back to token masking
    cut = {mol.GetBondBetweenAtoms(a, b).GetIdx() for (a, b), _ in BRICS.FindBRICSBonds(mol)}
    # union-find over the bonds that are not cut
    parent = list(range(mol.GetNumAtoms()))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for bond in mol.GetBonds():
        if bond.GetIdx() not in cut:
            parent[find(bond.GetBeginAtomIdx())] = find(bond.GetEndAtomIdx())
    groups: dict[int, list[int]] = {}
    limit = (n_ids - 1) if n_ids is not None else None
    for atom, position in enumerate(atom_positions):
        if limit is None or position < limit:
            groups.setdefault(find(atom), []).append(position)
    return [np.asarray(g, dtype=np.int64) for g in groups.values()]
