"""Molecule graphs for AttentiveFP: exact atom and bond features on small molecules."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from exlm_chem.benchmark.graphs import (
    ATOM_FEATURE_NAMES,
    ATOM_FEATURES,
    BOND_FEATURE_NAMES,
    BOND_FEATURES,
    graphs_for,
    require_torch_geometric,
    smiles_to_graph,
)

# the six one-hot blocks every atom has, without flags
SP3_CH3 = {"element=C", "degree=1", "charge=0", "total_hs=3", "hybridization=SP3",
           "chirality=CHI_UNSPECIFIED"}  # fmt: skip


def atom_names(graph) -> list[set[str]]:
    return [{ATOM_FEATURE_NAMES[j] for j in row.nonzero().flatten().tolist()} for row in graph.x]


def bond_names(graph) -> list[set[str]]:
    return [{BOND_FEATURE_NAMES[j] for j in row.nonzero().flatten().tolist()}
            for row in graph.edge_attr]


def test_feature_sizes_and_names():
    # element 20+other, degree 6+1, charge 5+1, Hs 5+1, hybridization 6+1, 2 flags, chirality 3+1
    assert ATOM_FEATURES == 21 + 7 + 6 + 6 + 7 + 2 + 4 == 53
    # bond type 4+1, 2 flags, stereo none/any/Z/E+other
    assert BOND_FEATURES == 5 + 2 + 5 == 12
    assert len(ATOM_FEATURE_NAMES) == len(set(ATOM_FEATURE_NAMES)) == ATOM_FEATURES
    assert len(BOND_FEATURE_NAMES) == len(set(BOND_FEATURE_NAMES)) == BOND_FEATURES


def test_ethanol_exact():
    graph = smiles_to_graph("CCO")
    assert graph.x.dtype == torch.float32 and graph.x.shape == (3, ATOM_FEATURES)
    assert atom_names(graph) == [
        SP3_CH3,
        {"element=C", "degree=2", "charge=0", "total_hs=2", "hybridization=SP3",
         "chirality=CHI_UNSPECIFIED"},
        {"element=O", "degree=1", "charge=0", "total_hs=1", "hybridization=SP3",
         "chirality=CHI_UNSPECIFIED"},
    ]  # fmt: skip
    assert graph.edge_index.dtype == torch.int64
    assert graph.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert graph.edge_attr.dtype == torch.float32 and graph.edge_attr.shape == (4, BOND_FEATURES)
    assert bond_names(graph) == [{"bond_type=SINGLE", "stereo=none"}] * 4
    assert set(graph.x.unique().tolist()) == {0.0, 1.0}


def test_benzene_aromatic():
    graph = smiles_to_graph("c1ccccc1")
    assert graph.x.shape == (6, ATOM_FEATURES) and graph.edge_index.shape == (2, 12)
    ring_ch = {"element=C", "degree=2", "charge=0", "total_hs=1", "hybridization=SP2",
               "aromatic", "atom_in_ring", "chirality=CHI_UNSPECIFIED"}  # fmt: skip
    assert atom_names(graph) == [ring_ch] * 6
    assert bond_names(graph) == [
        {"bond_type=AROMATIC", "conjugated", "bond_in_ring", "stereo=none"}] * 12
    # every atom has exactly two neighbours, each bond both ways
    assert torch.bincount(graph.edge_index[0]).tolist() == [2] * 6
    pairs = {tuple(p) for p in graph.edge_index.t().tolist()}
    assert all((b, a) in pairs for a, b in pairs)


@pytest.mark.parametrize(
    ("smiles", "atom"),
    [
        ("[Na+]", {"element=Na", "degree=0", "charge=1", "total_hs=0", "hybridization=S",
                   "chirality=CHI_UNSPECIFIED"}),
        ("C", {"element=C", "degree=0", "charge=0", "total_hs=4", "hybridization=SP3",
               "chirality=CHI_UNSPECIFIED"}),
        # lithium is outside the element list: the "other" slot, not a silent zero row
        ("[Li+]", {"element=other", "degree=0", "charge=1", "total_hs=0", "hybridization=S",
                   "chirality=CHI_UNSPECIFIED"}),
    ],
)  # fmt: skip
def test_molecules_without_bonds(smiles, atom):
    graph = smiles_to_graph(smiles)
    assert atom_names(graph) == [atom]
    assert graph.edge_index.shape == (2, 0) and graph.edge_index.dtype == torch.int64
    assert graph.edge_attr.shape == (0, BOND_FEATURES) and graph.edge_attr.dtype == torch.float32


@pytest.mark.parametrize(("smiles", "tag"), [("C[C@H](N)O", "CHI_TETRAHEDRAL_CCW"),
                                             ("C[C@@H](N)O", "CHI_TETRAHEDRAL_CW"),
                                             ("CC(N)O", "CHI_UNSPECIFIED")])
def test_chirality_tag(smiles, tag):
    names = atom_names(smiles_to_graph(smiles))
    assert names[1] == {"element=C", "degree=3", "charge=0", "total_hs=1",
                        "hybridization=SP3", f"chirality={tag}"}
    assert all("chirality=CHI_UNSPECIFIED" in names[i] for i in (0, 2, 3))


@pytest.mark.parametrize(("smiles", "stereo"), [("F/C=C/F", "E"), ("F/C=C\\F", "Z"),
                                                ("FC=CF", "none")])
def test_double_bond_stereo(smiles, stereo):
    bonds = bond_names(smiles_to_graph(smiles))
    assert bonds[2] == bonds[3] == {"bond_type=DOUBLE", f"stereo={stereo}"}
    assert bonds[0] == {"bond_type=SINGLE", "stereo=none"}


def test_triple_and_conjugated_bonds():
    assert bond_names(smiles_to_graph("C#N")) == [{"bond_type=TRIPLE", "stereo=none"}] * 2
    bonds = bond_names(smiles_to_graph("OC(=O)C=C"))  # acrylic acid: all conjugated
    assert [sorted(b) for b in bonds[::2]] == [
        ["bond_type=SINGLE", "conjugated", "stereo=none"],
        ["bond_type=DOUBLE", "conjugated", "stereo=none"],
        ["bond_type=SINGLE", "conjugated", "stereo=none"],
        ["bond_type=DOUBLE", "conjugated", "stereo=none"],
    ]


@pytest.mark.parametrize("bad", ["C1CC", "not a smiles", ""])
def test_invalid_smiles_named(bad):
    with pytest.raises(ValueError, match=f"cannot parse SMILES {bad!r}"):
        smiles_to_graph(bad)


def test_graphs_for_labels_and_rows():
    labels = np.array([[1.0, np.nan], [0.0, 1.0]])
    graphs = graphs_for(["CCO", "[Na+]"], labels)
    assert [g.x.shape[0] for g in graphs] == [3, 1]
    assert graphs[0].y.dtype == torch.float32 and graphs[0].y.shape == (1, 2)
    assert graphs[0].y[0, 0] == 1.0 and torch.isnan(graphs[0].y[0, 1])
    assert graphs[1].y.tolist() == [[0.0, 1.0]]
    assert graphs_for(["C"], np.array([1.0]))[0].y.shape == (1, 1)  # [N] = one task
    with pytest.raises(ValueError, match=r"row 1: RDKit cannot parse SMILES 'C1CC'"):
        graphs_for(["CCO", "C1CC"], labels)
    with pytest.raises(ValueError, match=r"labels must be \[3, T\]"):
        graphs_for(["C", "CC", "CCC"], labels)


def test_missing_torch_geometric_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_geometric", None)  # import now fails
    with pytest.raises(ImportError, match="pip install torch_geometric"):
        require_torch_geometric()
