"""Per-molecule feature vectors computed with RDKit.

The one place descriptors are computed: the estimators' ``features=`` option, the
benchmark's descriptor rows and pre-training's auxiliary targets (``exlm-chem corpus
prepare --descriptors``, ``exlm-chem corpus descriptors``) all call
:func:`molecule_features` or :func:`descriptor_values` (or their shorthands
:func:`rdkit2d_descriptors` / :func:`morgan_counts`).

* ``"rdkit2d"``: RDKit's 2D descriptor set (``rdkit.Chem.Descriptors._descList``, 217
  descriptors in RDKit 2026.09), as chemprop's ``rdkit_2d`` featurizer computes it.
* ``"rdkit2d_fast"``: the 35 descriptors of :data:`FAST_NAMES`, a subset of the same
  list that costs under a CPU-millisecond a molecule, parsing included (about 0.6 ms, most
  of it the parse and Crippen's logP/MR; ``"rdkit2d"``: about 13 ms), so that pre-training
  targets for a 1.87M-molecule corpus take CPU-minutes.
* ``"morgan"``: Morgan count fingerprint, radius 2, folded to 2048 entries.
* ``"morgan1024"``: the same folded to 1024 entries, MapLight's width.
* ``"avalon"``: Avalon count fingerprint, folded to 1024 entries.
* ``"erg"``: RDKit's extended reduced graph (ErG), 315 pharmacophore-pair values.
* ``"maccs"``: the 167 MACCS structural keys (0/1).
* ``"atompair"``: atom-pair count fingerprint, folded to 2048 entries.
* ``"mordred"``: Mordred's 2D descriptors (1,613 in mordredcommunity 2.0), the set several
  TDC ADMET entries feed their trees; needs the ``mordred`` extra (``pip install
  exlm_chem[mordred]``) and costs tens of CPU-milliseconds a molecule.

Values come back raw (float32, NaN where RDKit cannot compute a descriptor or the value
overflows float32); :mod:`exlm_chem.data.feature_spec` scales them. Rows never move: row
``i`` of every output is molecule ``i`` of the input.

Computation runs over worker processes
(:func:`~exlm_chem.data.process_map.map_chunks`, as scaffolds and canonical SMILES do)
once there are enough molecules to pay for starting them. :func:`molecule_features`
computes each distinct SMILES once and keeps the rows in :data:`MEMO` (the last
:data:`MEMO_BYTES` of them), so that a refit, a cross-validation fold or a prediction on
molecules this process has seen computes nothing again. Callers that checked their
SMILES already pass the check's RDKit molecules too (``molecules=``,
:attr:`~exlm_chem.data.featurize.CheckedSmiles.molecules`), so nothing parses them again.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.data.process_map import map_chunks
from exlm_chem.data.rdkit_reasons import as_molecule

__all__ = [
    "ATOMPAIR_BITS", "AVALON_BITS", "COMPUTED_KINDS", "ERG_WIDTH", "FAST_NAMES", "MACCS_WIDTH",
    "MAPLIGHT_MORGAN_BITS", "MEMO",
    "MEMO_BYTES", "MORGAN_BITS", "MORGAN_RADIUS", "RowMemo", "descriptor_values", "feature_names",
    "molecule_features", "morgan_counts",
    "rdkit2d_descriptors", "rdkit2d_names", "rdkit_version",
]  # fmt: skip

# computed from the molecule alone; "avalon" and "erg" are what MapLight, the leading
# fingerprint entry of the TDC ADMET leaderboard, feeds its trees beside Morgan counts and
# RDKit descriptors
COMPUTED_KINDS = ("rdkit2d", "rdkit2d_fast", "morgan", "morgan1024", "avalon", "erg",
                  "maccs", "atompair", "mordred")
# 2D descriptors costing a few tens of µs or less, + Crippen logP/MR
# (benchmarks/pretraining/descriptor_cost.py)
FAST_NAMES = (
    "MolWt", "HeavyAtomMolWt", "ExactMolWt", "Chi0n", "Chi0v", "Chi1n", "Chi1v",
    "HallKierAlpha", "Kappa1", "LabuteASA", "TPSA", "FractionCSP3", "HeavyAtomCount",
    "NHOHCount", "NOCount", "NumAliphaticCarbocycles", "NumAliphaticHeterocycles",
    "NumAliphaticRings", "NumAmideBonds", "NumAromaticCarbocycles", "NumAromaticHeterocycles",
    "NumAromaticRings", "NumAtomStereoCenters", "NumBridgeheadAtoms", "NumHDonors",
    "NumHeteroatoms", "NumHeterocycles", "NumSaturatedCarbocycles", "NumSaturatedHeterocycles",
    "NumSaturatedRings", "NumSpiroAtoms", "NumUnspecifiedAtomStereoCenters", "RingCount",
    "MolLogP", "MolMR",
)  # fmt: skip
MORGAN_RADIUS = 2
MORGAN_BITS = 2048
MAPLIGHT_MORGAN_BITS = 1024  # MapLight folds its Morgan counts to 1024 entries
AVALON_BITS = 1024  # Avalon count fingerprint, folded
ERG_WIDTH = 315  # RDKit's extended reduced graph (ErG) pharmacophore-pair vector
MACCS_WIDTH = 167  # RDKit's MACCS keys (bit 0 is never set)
ATOMPAIR_BITS = 2048  # atom-pair count fingerprint, folded
_MORGAN_WIDTHS = {"morgan": MORGAN_BITS, "morgan1024": MAPLIGHT_MORGAN_BITS}
# fewest molecules worth a worker (its start-up and imports): RDKit's full 2D set costs
# about 13 ms a molecule, so 200 pay for one; the other kinds cost a millisecond or less
# (benchmarks/results/descriptor_cost/)
_MIN_PER_WORKER = {"rdkit2d": 200, "mordred": 100}
_MIN_PER_WORKER_OTHERS = 1000
_CHUNK = 500  # molecules per task sent to a worker (bounds the float64 rows sent back)


def rdkit_version() -> str:
    from rdkit import rdBase

    return str(rdBase.rdkitVersion)


def rdkit2d_names() -> list[str]:
    """Names of the installed RDKit's 2D descriptors, in computation order."""
    from rdkit.Chem import Descriptors

    return [name for name, _ in Descriptors._descList]


def _descriptor_functions(kind: str) -> list[Callable[[Any], float]]:
    """The RDKit descriptor functions of ``"rdkit2d"`` or ``"rdkit2d_fast"``, in column
    order; a :data:`FAST_NAMES` entry the installed RDKit lacks raises ValueError."""
    from rdkit.Chem import Descriptors

    if kind == "rdkit2d":
        return [fn for _, fn in Descriptors._descList]
    table = dict(Descriptors._descList)
    missing = [name for name in FAST_NAMES if name not in table]
    if missing:
        raise ValueError(f"the installed RDKit {rdkit_version()} has no descriptor "
                         f"{', '.join(missing)} of the rdkit2d_fast set (FAST_NAMES): use "
                         "kind 'rdkit2d' or an RDKit that has them")
    return [table[name] for name in FAST_NAMES]


def _rdkit2d_rows(molecules: Sequence[Any], functions: Sequence[Callable[[Any], float]]
                  ) -> np.ndarray:
    """float64 [N, len(functions)]: each descriptor function of each molecule (an RDKit
    Mol or its binary form, or a SMILES parsed here: :func:`as_molecule`)."""
    from rdkit import rdBase

    out = np.full((len(molecules), len(functions)), np.nan, dtype=np.float64)
    for row, item in enumerate(molecules):
        mol = as_molecule(item)
        if mol is None:
            continue  # a row RDKit cannot read stays NaN; it never shifts the others
        with rdBase.BlockLogs():
            for col, fn in enumerate(functions):
                try:  # one descriptor failing on one molecule is a NaN, not a crash
                    out[row, col] = float(fn(mol))
                except Exception:  # RDKit raises many kinds here
                    pass
    return out


def _vector_rows(molecules: Sequence[Any], width: int,
                 vector: Callable[[Any], np.ndarray]) -> np.ndarray:
    """float64 [N, width]: ``vector(mol)`` of each molecule; NaN rows where RDKit cannot
    read one (:func:`as_molecule`), so a bad row never shifts the others."""
    out = np.full((len(molecules), width), np.nan, dtype=np.float64)
    for row, item in enumerate(molecules):
        mol = as_molecule(item)
        if mol is not None:
            out[row] = vector(mol)
    return out


def _morgan_vector(radius: int, n_bits: int) -> Callable[[Any], np.ndarray]:
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits
                                                     ).GetCountFingerprintAsNumPy


def _avalon_counts(mol: Any) -> np.ndarray:
    from rdkit.Avalon import pyAvalonTools

    counts = np.zeros(AVALON_BITS)
    for bit, count in pyAvalonTools.GetAvalonCountFP(mol, nBits=AVALON_BITS
                                                     ).GetNonzeroElements().items():
        counts[bit] = count
    return counts


def _erg(mol: Any) -> np.ndarray:
    from rdkit.Chem import rdReducedGraphs

    return rdReducedGraphs.GetErGFingerprint(mol)


def _maccs(mol: Any) -> np.ndarray:
    from rdkit.Chem import MACCSkeys

    return np.array(list(MACCSkeys.GenMACCSKeys(mol)), dtype=np.float64)


def _atompair_vector() -> Callable[[Any], np.ndarray]:
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetAtomPairGenerator(fpSize=ATOMPAIR_BITS
                                                       ).GetCountFingerprintAsNumPy


@functools.cache
def _mordred_calculator() -> Any:
    """Mordred's calculator of its 2D descriptors (3D ones need conformers)."""
    try:
        from mordred import Calculator, descriptors
    except ImportError as error:
        raise ImportError("feature kind 'mordred' needs the mordredcommunity package: "
                          "pip install 'exlm_chem[mordred]'") from error
    return Calculator(descriptors, ignore_3D=True)


def _mordred_rows(molecules: Sequence[Any]) -> np.ndarray:
    """float64 [N, D]: Mordred's descriptors of each molecule, NaN where one cannot be
    computed (:func:`_vector_rows`)."""
    calculator = _mordred_calculator()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # numpy's divide warnings of degenerate molecules
        return _vector_rows(molecules, len(calculator.descriptors), lambda mol: np.array(
            list(calculator(mol).fill_missing(np.nan)), dtype=np.float64))


def _float32(values: np.ndarray) -> np.ndarray:
    """float64 -> float32 with NaN for anything float32 cannot hold (inf, overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(np.float32)
    out[~np.isfinite(out)] = np.nan
    return out


def _compute(kind: str, molecules: Sequence[Any]) -> np.ndarray:
    """One chunk's rows, float32 already: a worker sends back half the bytes of float64.
    ``molecules``: RDKit molecules (binary, or Mols) or SMILES (:func:`as_molecule`)."""
    if kind in ("rdkit2d", "rdkit2d_fast"):
        return _float32(_rdkit2d_rows(molecules, _descriptor_functions(kind)))
    if kind in _MORGAN_WIDTHS:
        width = _MORGAN_WIDTHS[kind]
        return _float32(_vector_rows(molecules, width, _morgan_vector(MORGAN_RADIUS, width)))
    if kind == "avalon":
        return _float32(_vector_rows(molecules, AVALON_BITS, _avalon_counts))
    if kind == "erg":
        return _float32(_vector_rows(molecules, ERG_WIDTH, _erg))
    if kind == "maccs":
        return _float32(_vector_rows(molecules, MACCS_WIDTH, _maccs))
    if kind == "atompair":
        return _float32(_vector_rows(molecules, ATOMPAIR_BITS, _atompair_vector()))
    if kind == "mordred":
        return _float32(_mordred_rows(molecules))
    raise ValueError(f"unknown feature kind {kind!r}; choose from {COMPUTED_KINDS}")


def _computed(kind: str, molecules: Sequence[Any], n_jobs: int | None) -> np.ndarray:
    if kind == "rdkit2d_fast":
        _descriptor_functions(kind)  # a missing descriptor fails here, not in every worker
    return map_chunks(functools.partial(_compute, kind), molecules, n_jobs=n_jobs,
                      min_per_worker=_MIN_PER_WORKER.get(kind, _MIN_PER_WORKER_OTHERS),
                      chunk_size=_CHUNK,
                      task=f"computing {kind} features", join=np.concatenate)


def descriptor_values(kind: str, smiles: Sequence[str], n_jobs: int | None = None,
                      molecules: Sequence[Any] | None = None) -> tuple[np.ndarray, list[str]]:
    """Raw features of one computed kind for each SMILES, row-aligned.

    Parameters
    ----------
    kind : str
        One of :data:`COMPUTED_KINDS`.
    smiles : sequence of str
        Molecules, one per row (canonical or not); every row is computed (no
        deduplication: :func:`molecule_features` does that).
    n_jobs : int or None
        Worker processes; None or -1: every core this process may use (fewer
        than 400 molecules of ``"rdkit2d"``, 2000 of the other kinds, run in-process).
        Not 0.
    molecules : sequence, optional
        The molecules of ``smiles``, row for row, parsed already: RDKit Mols or their
        binary form (:attr:`~exlm_chem.data.featurize.CheckedSmiles.molecules`); None
        entries are NaN rows. Computed from instead of parsing the SMILES.

    Returns
    -------
    values : ndarray float32 [N, D]
        NaN where a value cannot be computed (or overflows float32), and on every
        column of a row RDKit cannot parse.
    names : list of str
        The D column names (:func:`feature_names`).

    Raises
    ------
    ValueError
        An unknown kind, or a :data:`FAST_NAMES` descriptor the installed RDKit lacks.
    """
    names = feature_names(kind)  # an unknown kind fails before any work
    smiles_sequence(smiles, "smiles")
    return _computed(kind, smiles if molecules is None else molecules, n_jobs), names


def rdkit2d_descriptors(smiles: Sequence[str],
                        n_jobs: int | None = None) -> tuple[np.ndarray, list[str]]:
    """RDKit's 2D descriptors of each SMILES: :func:`descriptor_values` of ``"rdkit2d"``
    (names: :func:`rdkit2d_names`)."""
    return descriptor_values("rdkit2d", smiles, n_jobs)


def morgan_counts(smiles: Sequence[str],
                  n_jobs: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Morgan count fingerprints (radius 2, 2048 entries), float32 [N, 2048] with names
    ``morgan_r2_<i>``; NaN rows for SMILES RDKit cannot parse."""
    return descriptor_values("morgan", smiles, n_jobs)


def feature_names(kind: str) -> list[str]:
    """Column names of a computed feature set (one of :data:`COMPUTED_KINDS`)."""
    if kind == "rdkit2d":
        return rdkit2d_names()
    if kind == "rdkit2d_fast":
        return list(FAST_NAMES)
    if kind in _MORGAN_WIDTHS:
        prefix = "morgan" if kind == "morgan" else f"morgan{_MORGAN_WIDTHS[kind]}"
        return [f"{prefix}_r{MORGAN_RADIUS}_{i}" for i in range(_MORGAN_WIDTHS[kind])]
    if kind == "avalon":
        return [f"avalon_{i}" for i in range(AVALON_BITS)]
    if kind == "erg":
        return [f"erg_{i}" for i in range(ERG_WIDTH)]
    if kind == "maccs":
        return [f"maccs_{i}" for i in range(MACCS_WIDTH)]
    if kind == "atompair":
        return [f"atompair_{i}" for i in range(ATOMPAIR_BITS)]
    if kind == "mordred":
        return [f"mordred_{d}" for d in _mordred_calculator().descriptors]
    raise ValueError(f"unknown feature kind {kind!r}; choose from {COMPUTED_KINDS}")


class RowMemo:
    """Feature rows computed in this process, ``(kind, SMILES) -> float32 row``; past
    ``max_bytes`` of rows the least recently used go first. Thread-safe."""

    def __init__(self, max_bytes: int = 0) -> None:
        self.max_bytes = max_bytes
        self._rows: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows.move_to_end(key)
            return row

    def put(self, key: tuple[str, str], row: np.ndarray) -> None:
        row = np.array(row, dtype=np.float32)  # its own copy: never a view of a chunk
        with self._lock:
            old = self._rows.pop(key, None)
            self._bytes += row.nbytes - (0 if old is None else old.nbytes)
            self._rows[key] = row
            while self._bytes > self.max_bytes and self._rows:
                self._bytes -= self._rows.popitem(last=False)[1].nbytes

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._rows)


# 256 MiB: RDKit 2D rows (the tree head's) of about 300k molecules, Morgan counts of 32k
MEMO_BYTES = 256 * 2**20
MEMO = RowMemo(MEMO_BYTES)


def molecule_features(kinds: Sequence[str], smiles: Sequence[str], n_jobs: int | None = None,
                      molecules: Sequence[Any] | None = None) -> np.ndarray:
    """Raw features [N, sum of widths] float32 of ``kinds`` side by side, row-aligned.

    Each distinct SMILES is computed once, and not at all when :data:`MEMO` holds its
    row from an earlier call of this process (the parts of one fit, a refit, a
    prediction). Pass canonical SMILES so that two spellings of a molecule share a row.
    ``molecules``: the RDKit molecules of ``smiles`` row for row, as
    :func:`descriptor_values` takes them.
    """
    smiles_sequence(smiles, "smiles")
    # the molecule of each SMILES: what is computed, read instead of parsing the SMILES
    source = dict(zip(smiles, smiles if molecules is None else molecules, strict=True))
    blocks = []
    for kind in kinds:
        rows = {s: MEMO.get((kind, s)) for s in source}  # held here: eviction cannot drop them
        missing = [s for s, row in rows.items() if row is None]
        if missing:
            values = _computed(kind, [source[s] for s in missing], n_jobs)
            for s, row in zip(missing, values, strict=True):
                MEMO.put((kind, s), row)
                rows[s] = row
        width = len(feature_names(kind))
        blocks.append(np.array([rows[s] for s in smiles], np.float32).reshape(-1, width))
    if not blocks:
        return np.zeros((len(smiles), 0), dtype=np.float32)
    return np.concatenate(blocks, axis=1)
