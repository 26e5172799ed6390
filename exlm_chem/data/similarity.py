"""Tanimoto similarity on Morgan bits: nearest neighbours, clusters, a cluster held-out part.

One mechanism for "how far is a molecule from a set of molecules", used by the ADMET
panel's applicability domain (:mod:`exlm_chem.admet.domain`) and by the out-of-distribution
held-out parts (:func:`cluster_held_out`): the similarity of a molecule to its nearest
neighbour in the set, on Morgan fingerprints of radius 2 folded to 2048 bits (ECFP4-like,
the fingerprint the field reports nearest-neighbour Tanimoto on).

Fingerprints are kept as the sorted on-bit positions of each molecule (CSR: ``indices`` and
``offsets``), a tenth of packed bits for drug-like molecules, and compared block by block
through one sparse product, so a set of 50,000 molecules never becomes a dense matrix.

Shapes: N reference molecules, n query molecules, B bits (:data:`FP_BITS`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["FP_BITS", "FP_RADIUS", "ClusterHeldOut", "Fingerprints", "cluster_held_out",
           "morgan_bits", "nearest_similarity", "similarity_clusters"]

FP_RADIUS = 2
FP_BITS = 2048
# queries compared at once: a block's dense similarities are [block, N] float32
_BLOCK = 256


class Fingerprints(NamedTuple):
    """Morgan bits of N molecules as sorted on-bit positions (CSR rows)."""

    indices: np.ndarray  # [nnz] uint16: on-bit positions, row after row
    offsets: np.ndarray  # [N + 1] int64: row i is indices[offsets[i]:offsets[i + 1]]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def counts(self) -> np.ndarray:
        """On bits per molecule [N] float32."""
        return np.diff(self.offsets).astype(np.float32)

    def matrix(self) -> Any:
        """The bits as a scipy CSR matrix [N, B] float32 of ones."""
        from scipy.sparse import csr_matrix

        data = np.ones(len(self.indices), np.float32)
        return csr_matrix((data, self.indices.astype(np.int32), self.offsets),
                          shape=(len(self), FP_BITS))

    def take(self, rows: np.ndarray) -> Fingerprints:
        """The fingerprints of ``rows`` [n], in that order."""
        rows = np.asarray(rows, np.int64)
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        lengths = ends - starts
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if not len(rows):
            return Fingerprints(np.zeros(0, np.uint16), offsets)
        # each kept row's positions, gathered without a Python loop
        positions = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return Fingerprints(self.indices[positions], offsets)

    def arrays(self) -> dict[str, np.ndarray]:
        """What :meth:`from_arrays` reads back (for ``safetensors.numpy.save``)."""
        return {"fp_indices": np.ascontiguousarray(self.indices, np.uint16),
                "fp_offsets": np.ascontiguousarray(self.offsets, np.int64)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Fingerprints:
        """Fingerprints :meth:`arrays` wrote; a ``ValueError`` if they do not fit together."""
        indices = np.asarray(arrays["fp_indices"])
        offsets = np.asarray(arrays["fp_offsets"])
        if (indices.dtype != np.uint16 or offsets.dtype != np.int64 or offsets.ndim != 1
                or not len(offsets) or offsets[0] != 0 or offsets[-1] != len(indices)
                or np.any(np.diff(offsets) < 0)):
            raise ValueError("fingerprint arrays: 'fp_offsets' must rise from 0 to the "
                             "length of the uint16 'fp_indices'")
        return cls(indices, offsets)


def morgan_bits(molecules: Sequence[Any]) -> Fingerprints:
    """Morgan bits (radius :data:`FP_RADIUS`, :data:`FP_BITS` bits) of RDKit molecules
    (or SMILES; a SMILES RDKit rejects is a ``ValueError`` naming it)."""
    from rdkit.Chem import rdFingerprintGenerator

    from exlm_chem.data.rdkit_reasons import quiet_mol

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=FP_RADIUS, fpSize=FP_BITS)
    rows, lengths = [], []
    for item in molecules:
        mol = quiet_mol(item) if isinstance(item, str) else item
        if mol is None:
            raise ValueError(f"RDKit cannot read the SMILES {item!r}")
        on = np.asarray(generator.GetFingerprint(mol).GetOnBits(), np.uint16)
        rows.append(on)
        lengths.append(len(on))
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    indices = np.concatenate(rows) if rows else np.zeros(0, np.uint16)
    return Fingerprints(indices.astype(np.uint16), offsets)


def _similarity_blocks(query: Fingerprints, reference: Fingerprints
                       ) -> Iterator[tuple[int, np.ndarray]]:
    """Tanimoto similarities of each block of queries to every reference molecule:
    (first query row, [block, N] float32)."""
    ref = reference.matrix()  # [N, B]
    ref_counts = reference.counts()  # [N]
    q_counts = query.counts()  # [n]
    dense_rows = query.matrix()
    for lo in range(0, len(query), _BLOCK):
        block = dense_rows[lo:lo + _BLOCK].toarray()  # [b, B]
        shared = np.asarray(ref @ block.T).T  # [b, N]: bits on in both
        union = q_counts[lo:lo + _BLOCK, None] + ref_counts[None, :] - shared  # [b, N]
        with np.errstate(invalid="ignore", divide="ignore"):
            sim = np.where(union > 0, shared / union, 0.0).astype(np.float32)
        yield lo, sim


def nearest_similarity(query: Fingerprints, reference: Fingerprints,
                       groups: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """The Tanimoto similarity of each query to its nearest reference molecule.

    Parameters
    ----------
    query, reference : Fingerprints
        n and N molecules.
    groups : sequence of G int arrays, optional
        Reference rows of G sets (they may overlap); the nearest neighbour is then sought
        in each set apart.

    Returns
    -------
    ndarray
        [n] float32 without ``groups``, [n, G] with them; 0 where a set is empty.
    """
    n = len(query)
    out = np.zeros((n, 1 if groups is None else len(groups)), np.float32)
    if n == 0 or len(reference) == 0:
        return out[:, 0] if groups is None else out
    for lo, sim in _similarity_blocks(query, reference):
        if groups is None:
            out[lo:lo + len(sim), 0] = sim.max(axis=1)
            continue
        for g, rows in enumerate(groups):
            if len(rows):
                out[lo:lo + len(sim), g] = sim[:, rows].max(axis=1)
    return out[:, 0] if groups is None else out


def similarity_clusters(fingerprints: Fingerprints, threshold: float = 0.4) -> np.ndarray:
    """Taylor-Butina clusters: the molecule with the most neighbours at Tanimoto
    similarity >= ``threshold`` heads a cluster of itself and its unassigned neighbours,
    then the next, until every molecule has a cluster. Returns labels [N] int64 (0 is the
    largest cluster; ties go to the earlier row)."""
    n = len(fingerprints)
    neighbours: list[np.ndarray] = []
    for lo, sim in _similarity_blocks(fingerprints, fingerprints):
        for i, row in enumerate(sim >= threshold):
            hits = np.flatnonzero(row)
            neighbours.append(hits[hits != lo + i])
    order = sorted(range(n), key=lambda i: (-len(neighbours[i]), i))
    labels = np.full(n, -1, np.int64)
    cluster = 0
    for head in order:
        if labels[head] >= 0:
            continue
        members = neighbours[head][labels[neighbours[head]] < 0]
        labels[head] = cluster
        labels[members] = cluster
        cluster += 1
    return labels


class ClusterHeldOut(NamedTuple):
    """What :func:`cluster_held_out` holds out."""

    train_rows: np.ndarray  # [n - m] int64, sorted
    held_rows: np.ndarray  # [m] int64, sorted
    held_similarity: np.ndarray  # [m] float32: each held-out molecule's nearest in train


def cluster_held_out(fingerprints: Fingerprints, fraction: float,
                     threshold: float = 0.4) -> ClusterHeldOut:
    """Whole clusters held out, the least similar to the rest first.

    Molecules are clustered (:func:`similarity_clusters`); a cluster is as near to the rest
    as its member nearest to a molecule outside it. Clusters are held out from the
    farthest on until ``fraction`` of the molecules are (a cluster that would overshoot by
    more than a tenth of the target is passed over), so the part is what a model meets on
    another lab's chemistry, not a scaffold cousin of its training molecules.

    Parameters
    ----------
    fingerprints : Fingerprints
        The N molecules' bits (:func:`morgan_bits`).
    fraction : float
        Share held out, in (0, 1).
    threshold : float
        Tanimoto similarity at which two molecules are neighbours in a cluster.

    Returns
    -------
    ClusterHeldOut
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
    labels = similarity_clusters(fingerprints, threshold)
    n = len(labels)
    outside = np.zeros(n, np.float32)  # each molecule's nearest outside its cluster
    for lo, sim in _similarity_blocks(fingerprints, fingerprints):
        same = labels[lo:lo + len(sim), None] == labels[None, :]  # [b, N]
        outside[lo:lo + len(sim)] = np.where(same, 0.0, sim).max(axis=1)
    n_clusters = int(labels.max()) + 1
    nearness = np.zeros(n_clusters, np.float32)
    np.maximum.at(nearness, labels, outside)
    sizes = np.bincount(labels, minlength=n_clusters)
    target = fraction * n
    held = np.zeros(n, bool)
    count = 0
    for c in np.argsort(nearness, kind="stable"):
        if count >= target:
            break
        if count + sizes[c] > 1.1 * target and count > 0:
            continue
        held |= labels == c
        count += int(sizes[c])
    train_rows, held_rows = np.flatnonzero(~held), np.flatnonzero(held)
    similarity = nearest_similarity(fingerprints.take(held_rows),
                                    fingerprints.take(train_rows))
    return ClusterHeldOut(train_rows.astype(np.int64), held_rows.astype(np.int64), similarity)
