"""Tanimoto nearest neighbours, clusters and the cluster held-out part against RDKit."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data.similarity import (
    Fingerprints,
    cluster_held_out,
    morgan_bits,
    nearest_similarity,
    similarity_clusters,
)

SMILES = ["CCO", "CCCO", "CCCCO", "c1ccccc1", "c1ccccc1O", "c1ccccc1N", "CC(=O)Oc1ccccc1C(=O)O",
          "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "C1CCCCC1", "ClC(Cl)(Cl)Cl", "OCC(O)CO", "CCN(CC)CC"]


def _rdkit_nearest(query, reference):
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    ref = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in reference]
    return np.array([max(DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(
        Chem.MolFromSmiles(s)), ref)) for s in query])


def test_nearest_similarity_is_rdkits_tanimoto_of_the_nearest_molecule():
    query, reference = [*SMILES[:5], "CC(C)CO"], SMILES[5:]
    got = nearest_similarity(morgan_bits(query), morgan_bits(reference))
    np.testing.assert_allclose(got, _rdkit_nearest(query, reference), rtol=1e-6)
    groups = [np.array([0, 1]), np.array([2, 3, 4, 5, 6]), np.array([], np.int64)]
    per_group = nearest_similarity(morgan_bits(query), morgan_bits(reference), groups)
    for g, rows in enumerate(groups[:2]):
        np.testing.assert_allclose(per_group[:, g], _rdkit_nearest(
            query, [reference[i] for i in rows]), rtol=1e-6)
    assert (per_group[:, 2] == 0).all()


def test_fingerprints_round_trip_and_take_rows_in_order():
    fps = morgan_bits(SMILES)
    again = Fingerprints.from_arrays(fps.arrays())
    np.testing.assert_array_equal(again.indices, fps.indices)
    taken = fps.take(np.array([4, 0]))
    np.testing.assert_allclose(nearest_similarity(taken, morgan_bits([SMILES[4]])), [1.0, 0.0],
                               atol=0.35)
    assert nearest_similarity(taken, fps.take(np.array([0])))[1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fp_offsets"):
        Fingerprints.from_arrays({"fp_indices": fps.indices, "fp_offsets": fps.offsets[:-1]})


def test_clusters_hold_neighbours_and_the_held_out_part_is_the_least_like_the_rest():
    from exlm_chem.data.tdc_admet import load_tdc_admet

    smiles = load_tdc_admet("hia_hou", download=False).train_val.smiles
    fps = morgan_bits(smiles)
    labels = similarity_clusters(fps, 0.4)
    assert labels.min() == 0 and np.bincount(labels)[0] == np.bincount(labels).max()
    part = cluster_held_out(fps, 0.1)
    assert abs(len(part.held_rows) - 0.1 * len(smiles)) <= 0.012 * len(smiles)
    assert not set(part.held_rows) & set(part.train_rows)
    assert set(labels[part.held_rows]).isdisjoint(labels[part.train_rows])  # whole clusters
    np.testing.assert_allclose(part.held_similarity, nearest_similarity(
        fps.take(part.held_rows), fps.take(part.train_rows)))
    random = np.random.default_rng(0).permutation(len(smiles))[:len(part.held_rows)]
    rest = np.setdiff1d(np.arange(len(smiles)), random)
    assert np.median(part.held_similarity) < np.median(
        nearest_similarity(fps.take(random), fps.take(rest))) - 0.1
