"""Molecule graphs for graph neural network baselines (AttentiveFP).

Each heavy atom is a node, each bond two directed edges. Every feature is a one-hot
block over a fixed vocabulary, and every block except the two flags ends in an "other"
slot, so an unusual atom (a rare element, a hexavalent sulfur, an exotic chirality tag)
still gets exactly one bit per block instead of silently matching a common value.

Atom blocks, in column order: element, heavy-atom degree, formal charge, total hydrogen
count, hybridization, aromatic flag, in-ring flag, chirality tag. Bond blocks: bond type,
conjugated flag, in-ring flag, double-bond stereo (RDKit's cis/trans labels are folded
into Z/E, the same geometry). :data:`ATOM_FEATURE_NAMES` and :data:`BOND_FEATURE_NAMES`
name every column, e.g. ``"element=C"`` or ``"stereo=E"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from torch_geometric.data import Data

__all__ = [
    "ATOM_FEATURES", "ATOM_FEATURE_NAMES", "BOND_FEATURES", "BOND_FEATURE_NAMES",
    "graphs_for", "require_torch_geometric", "smiles_to_graph",
]  # fmt: skip

OTHER = "other"
# Organic subset plus the halogens, metalloids and counter-ions found in MoleculeNet.
ELEMENTS = ("H", "B", "C", "N", "O", "F", "Na", "Si", "P", "S", "Cl", "K", "Ca", "Fe",
            "Zn", "As", "Se", "Br", "Sn", "I")  # fmt: skip
DEGREES = (0, 1, 2, 3, 4, 5)  # heavy-atom neighbours; 6+ is "other"
FORMAL_CHARGES = (-2, -1, 0, 1, 2)
TOTAL_HS = (0, 1, 2, 3, 4)
# RDKit HybridizationType names; UNSPECIFIED, SP2D and OTHER land in "other"
HYBRIDIZATIONS = ("S", "SP", "SP2", "SP3", "SP3D", "SP3D2")
# RDKit ChiralType names; non-tetrahedral tags land in "other"
CHIRALITIES = ("CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW")
BOND_TYPES = ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC")  # dative etc. are "other"
# RDKit BondStereo name -> our label; atropisomer labels land in "other"
STEREOS = {"STEREONONE": "none", "STEREOANY": "any", "STEREOZ": "Z", "STEREOCIS": "Z",
           "STEREOE": "E", "STEREOTRANS": "E"}  # fmt: skip
STEREO_LABELS = ("none", "any", "Z", "E")


def require_torch_geometric() -> None:
    """Raise an ImportError that says how to install PyG when it is missing."""
    try:
        import torch_geometric  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "the AttentiveFP baseline needs torch_geometric: pip install torch_geometric "
            "(or pip install 'exlm_chem[baselines]')"
        ) from error


def _block(name: str, values: Sequence[object]) -> list[str]:
    return [*(f"{name}={v}" for v in values), f"{name}={OTHER}"]


ATOM_FEATURE_NAMES: tuple[str, ...] = (
    *_block("element", ELEMENTS), *_block("degree", DEGREES),
    *_block("charge", FORMAL_CHARGES), *_block("total_hs", TOTAL_HS),
    *_block("hybridization", HYBRIDIZATIONS), "aromatic", "atom_in_ring",
    *_block("chirality", CHIRALITIES),
)
BOND_FEATURE_NAMES: tuple[str, ...] = (
    *_block("bond_type", BOND_TYPES), "conjugated", "bond_in_ring",
    *_block("stereo", STEREO_LABELS),
)
ATOM_FEATURES: int = len(ATOM_FEATURE_NAMES)
BOND_FEATURES: int = len(BOND_FEATURE_NAMES)
_ATOM_COLUMN = {name: i for i, name in enumerate(ATOM_FEATURE_NAMES)}
_BOND_COLUMN = {name: i for i, name in enumerate(BOND_FEATURE_NAMES)}


def _hot(columns: dict[str, int], name: str, value: object) -> int:
    """Column of ``name=value``, or of ``name=other`` when value is not in the vocabulary."""
    return columns.get(f"{name}={value}", columns[f"{name}={OTHER}"])


def _atom_columns(atom) -> list[int]:
    columns = [
        _hot(_ATOM_COLUMN, "element", atom.GetSymbol()),
        _hot(_ATOM_COLUMN, "degree", atom.GetDegree()),
        _hot(_ATOM_COLUMN, "charge", atom.GetFormalCharge()),
        _hot(_ATOM_COLUMN, "total_hs", atom.GetTotalNumHs()),
        _hot(_ATOM_COLUMN, "hybridization", atom.GetHybridization().name),
        _hot(_ATOM_COLUMN, "chirality", atom.GetChiralTag().name),
    ]
    if atom.GetIsAromatic():
        columns.append(_ATOM_COLUMN["aromatic"])
    if atom.IsInRing():
        columns.append(_ATOM_COLUMN["atom_in_ring"])
    return columns


def _bond_columns(bond) -> list[int]:
    stereo = STEREOS.get(bond.GetStereo().name, OTHER)
    columns = [
        _hot(_BOND_COLUMN, "bond_type", bond.GetBondType().name),
        _BOND_COLUMN[f"stereo={stereo}"],
    ]
    if bond.GetIsConjugated():
        columns.append(_BOND_COLUMN["conjugated"])
    if bond.IsInRing():
        columns.append(_BOND_COLUMN["bond_in_ring"])
    return columns


def smiles_to_graph(smiles: str) -> Data:
    """One molecule as a PyG graph.

    Returns
    -------
    torch_geometric.data.Data
        ``x`` float32 [n_atoms, ATOM_FEATURES]; ``edge_index`` int64 [2, 2 * n_bonds]
        (bond k is edges 2k and 2k + 1, one per direction); ``edge_attr`` float32
        [2 * n_bonds, BOND_FEATURES]. A molecule without bonds has empty edge tensors.

    Raises
    ------
    ValueError
        RDKit cannot parse ``smiles`` (the message names it).
    """
    require_torch_geometric()
    import torch
    from rdkit import Chem
    from rdkit.rdBase import BlockLogs
    from torch_geometric.data import Data

    with BlockLogs():  # our error names the SMILES; RDKit's stderr chatter adds nothing
        mol = Chem.MolFromSmiles(smiles) if isinstance(smiles, str) and smiles else None
    if mol is None:
        raise ValueError(f"RDKit cannot parse SMILES {smiles!r}")
    x = np.zeros((mol.GetNumAtoms(), ATOM_FEATURES), dtype=np.float32)
    for atom in mol.GetAtoms():
        x[atom.GetIdx(), _atom_columns(atom)] = 1.0
    n_bonds = mol.GetNumBonds()
    edge_index = np.zeros((2, 2 * n_bonds), dtype=np.int64)
    edge_attr = np.zeros((2 * n_bonds, BOND_FEATURES), dtype=np.float32)
    for k, bond in enumerate(mol.GetBonds()):
        begin, end = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        edge_index[:, 2 * k] = (begin, end)
        edge_index[:, 2 * k + 1] = (end, begin)
        edge_attr[2 * k : 2 * k + 2, _bond_columns(bond)] = 1.0
    return Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(edge_index),
                edge_attr=torch.from_numpy(edge_attr))


def graphs_for(smiles: Sequence[str], labels: np.ndarray) -> list[Data]:
    """Graphs for ``smiles`` with ``y`` = the molecule's label row, float32 [1, T].

    ``labels`` is [N] or [N, T] with NaN for missing entries (kept as NaN). An unparsable
    SMILES raises ValueError naming its row.
    """
    import torch

    labels = np.asarray(labels, dtype=np.float32)
    if labels.ndim == 1:
        labels = labels[:, None]  # one task
    if labels.ndim != 2 or labels.shape[0] != len(smiles):
        raise ValueError(f"labels must be [{len(smiles)}, T], got shape {labels.shape}")
    graphs = []
    for row, text in enumerate(smiles):
        try:
            graph = smiles_to_graph(text)
        except ValueError as error:
            raise ValueError(f"row {row}: {error}") from None
        graph.y = torch.from_numpy(labels[row : row + 1].copy())  # [1, T]
        graphs.append(graph)
    return graphs
