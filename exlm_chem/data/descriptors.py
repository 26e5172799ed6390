"""Per-molecule feature vectors computed with RDKit, and their train-fitted normalisation.

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
* ``"avalon"``: Avalon count fingerprint, folded to 1024 entries.
* ``"erg"``: RDKit's extended reduced graph (ErG), 315 pharmacophore-pair values.

Values come back raw (float32, NaN where RDKit cannot compute a descriptor or the value
overflows float32). :class:`FeatureScaler` is the normalisation fitted on training rows:
a robust standardisation ``(x - median) / (IQR / 1.349)`` per column (descriptors such as
``Ipc`` or ``BertzCT`` span many orders of magnitude, so a mean and standard deviation
would be dominated by a few molecules), then clipped to ``±CLIP``; a missing value
(NaN or infinite) becomes 0, the training median, after scaling. Rows never move: row
``i`` of every output is molecule ``i`` of the input.

Computation runs over worker processes
(:func:`~exlm_chem.data.process_map.map_chunks`, as scaffolds and canonical SMILES do)
once there are enough molecules to pay for starting them; callers compute each distinct
canonical SMILES once (:func:`molecule_features` deduplicates). Callers that checked their
SMILES already pass the check's RDKit molecules too (``molecules=``,
:attr:`~exlm_chem.data.featurize.CheckedSmiles.molecules`), so nothing parses them again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.data.process_map import map_chunks
from exlm_chem.data.rdkit_reasons import as_molecule

__all__ = [
    "AUTO", "CLIP", "COMPUTED_KINDS", "FAST_NAMES", "KINDS", "MORGAN_BITS", "MORGAN_RADIUS",
    "USER_KIND", "FeatureScaler", "FeatureSpec", "descriptor_values", "feature_kinds",
    "feature_names", "molecule_features", "morgan_counts", "raw_features",
    "rdkit2d_descriptors", "rdkit2d_names", "rdkit_version",
]  # fmt: skip

# computed from the molecule alone; "avalon" and "erg" are what MapLight, the leading
# fingerprint entry of the TDC ADMET leaderboard, feeds its trees beside Morgan counts and
# RDKit descriptors
COMPUTED_KINDS = ("rdkit2d", "rdkit2d_fast", "morgan", "avalon", "erg")
# 2D descriptors costing a few tens of µs or less, + Crippen logP/MR (benchmarks/descriptor_cost.py)
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
AVALON_BITS = 1024  # Avalon count fingerprint, folded
ERG_WIDTH = 315  # RDKit's extended reduced graph (ErG) pharmacophore-pair vector
CLIP = 5.0  # scaled values beyond ±CLIP robust standard deviations are clipped
_IQR_TO_SD = 1.349  # IQR of a standard normal: a robust scale in standard-deviation units
# columns a scaler reads at a time: a float64 copy of 2048 Morgan columns of a million
# molecules is 16 GB, and nanpercentile makes several
_BLOCK = 64
_MIN_PER_WORKER = 1000  # fewest molecules worth a worker: under 2000 all run in-process
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
    if kind == "morgan":
        vector = _morgan_vector(MORGAN_RADIUS, MORGAN_BITS)
        return _float32(_vector_rows(molecules, MORGAN_BITS, vector))
    if kind == "avalon":
        return _float32(_vector_rows(molecules, AVALON_BITS, _avalon_counts))
    if kind == "erg":
        return _float32(_vector_rows(molecules, ERG_WIDTH, _erg))
    raise ValueError(f"unknown feature kind {kind!r}; choose from {COMPUTED_KINDS}")


def _computed(kind: str, molecules: Sequence[Any], n_jobs: int | None) -> np.ndarray:
    if kind == "rdkit2d_fast":
        _descriptor_functions(kind)  # a missing descriptor fails here, not in every worker
    return map_chunks(functools.partial(_compute, kind), molecules, n_jobs=n_jobs,
                      min_per_worker=_MIN_PER_WORKER, chunk_size=_CHUNK,
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
        than 2000 molecules run in-process). Not 0.
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
    if kind == "morgan":
        return [f"morgan_r{MORGAN_RADIUS}_{i}" for i in range(MORGAN_BITS)]
    if kind == "avalon":
        return [f"avalon_{i}" for i in range(AVALON_BITS)]
    if kind == "erg":
        return [f"erg_{i}" for i in range(ERG_WIDTH)]
    raise ValueError(f"unknown feature kind {kind!r}; choose from {COMPUTED_KINDS}")


def molecule_features(kinds: Sequence[str], smiles: Sequence[str], n_jobs: int | None = None,
                      cache: dict[tuple[str, str], np.ndarray] | None = None,
                      molecules: Sequence[Any] | None = None) -> np.ndarray:
    """Raw features [N, sum of widths] float32 of ``kinds`` side by side, row-aligned.

    Each distinct SMILES is computed once; ``cache`` (``(kind, SMILES) -> row``) carries
    rows between calls, e.g. over the parts of one fit. Pass canonical SMILES so that
    two spellings of a molecule share an entry. ``molecules``: the RDKit molecules of
    ``smiles`` row for row, as :func:`descriptor_values` takes them.
    """
    smiles_sequence(smiles, "smiles")
    cache = {} if cache is None else cache
    # the molecule of each SMILES: what is computed, read instead of parsing the SMILES
    source = dict(zip(smiles, smiles if molecules is None else molecules, strict=True))
    blocks = []
    for kind in kinds:
        missing = list(dict.fromkeys(s for s in smiles if (kind, s) not in cache))
        if missing:
            values = _computed(kind, [source[s] for s in missing], n_jobs)
            cache.update(((kind, s), v) for s, v in zip(missing, values, strict=True))
        width = len(feature_names(kind))
        blocks.append(np.array([cache[(kind, s)] for s in smiles], np.float32).reshape(-1, width))
    if not blocks:
        return np.zeros((len(smiles), 0), dtype=np.float32)
    return np.concatenate(blocks, axis=1)


@dataclass(frozen=True, eq=False)
class FeatureScaler:
    """Robust standardisation fitted on training rows; see the module docstring.

    Attributes
    ----------
    center : ndarray float64 [F]
        Per-column median of the finite training values (0 for a column with none).
    scale : ndarray float64 [F]
        IQR / 1.349; the standard deviation where the IQR is 0 (e.g. a rare fingerprint
        bit); 1 where that is 0 too.
    clip : float
    """

    center: np.ndarray
    scale: np.ndarray
    clip: float = CLIP

    @classmethod
    def fit(cls, values: np.ndarray, clip: float = CLIP,
            rows: np.ndarray | None = None) -> FeatureScaler:
        """Fit on raw training features [N, F] (NaN = missing, ignored), or on their rows
        ``rows``. Each column is scaled on its own, so :data:`_BLOCK` columns are read at a
        time: a block's float64 copy, not the whole table's, bounds the memory."""
        values = np.asarray(values)
        if values.ndim != 2:
            raise ValueError(f"features must be 2-D [N, F], got shape {values.shape}")
        center, scale = np.zeros(values.shape[1]), np.ones(values.shape[1])
        for a in range(0, values.shape[1], _BLOCK):
            x = _block(values, rows, a)  # [n, <=_BLOCK] float64
            x = np.where(np.isfinite(x), x, np.nan)
            seen = ~np.isnan(x).all(axis=0)  # columns with at least one finite training value
            if not seen.any():
                continue
            q1, median, q3 = np.nanpercentile(x[:, seen], [25, 50, 75], axis=0)
            robust = (q3 - q1) / _IQR_TO_SD
            std = np.nanstd(x[:, seen], axis=0)
            tiny = np.finfo(np.float32).tiny
            columns = np.flatnonzero(seen) + a
            center[columns] = median
            scale[columns] = np.where(robust > tiny, robust, np.where(std > tiny, std, 1.0))
        return cls(center, scale, float(clip))

    @property
    def n_features(self) -> int:
        return int(self.center.size)

    def transform(self, values: np.ndarray, rows: np.ndarray | None = None,
                  dtype: Any = np.float32) -> np.ndarray:
        """Scaled features [N, F] (or of the rows ``rows``) in ``dtype``: missing -> 0 (the
        median), then clipped; computed :data:`_BLOCK` columns at a time."""
        values = np.asarray(values)
        if values.ndim != 2 or values.shape[1] != self.n_features:
            raise ValueError(f"features must be [N, {self.n_features}], got shape "
                             f"{values.shape}")
        n = values.shape[0] if rows is None else len(rows)
        out = np.empty((n, self.n_features), dtype=dtype)
        for a in range(0, self.n_features, _BLOCK):
            b = slice(a, a + _BLOCK)
            with np.errstate(invalid="ignore", over="ignore"):
                scaled = (_block(values, rows, a) - self.center[b]) / self.scale[b]
            scaled[~np.isfinite(scaled)] = 0.0
            out[:, b] = np.clip(scaled, -self.clip, self.clip)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (plain lists)."""
        return {"center": self.center.tolist(), "scale": self.scale.tolist(),
                "clip": self.clip}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureScaler:
        center = np.asarray(data["center"], dtype=np.float64)
        scale = np.asarray(data["scale"], dtype=np.float64)
        if center.ndim != 1 or center.shape != scale.shape:
            raise ValueError(f"center and scale must be two 1-D lists of one length, got "
                             f"{center.shape} and {scale.shape}")
        if not (np.isfinite(center).all() and np.isfinite(scale).all() and (scale > 0).all()):
            raise ValueError("center must be finite and scale finite and positive")
        return cls(center, scale, float(data["clip"]))


def _block(values: np.ndarray, rows: np.ndarray | None, start: int) -> np.ndarray:
    """Columns ``start:start + _BLOCK`` of ``values`` (of its rows ``rows``) as float64."""
    columns = slice(start, start + _BLOCK)
    part = values[:, columns] if rows is None else values[rows, columns]
    return np.asarray(part, dtype=np.float64)


USER_KIND = "columns"  # the caller's own per-row features (not computed here)
KINDS = (*COMPUTED_KINDS, USER_KIND)
AUTO = "auto"  # features=AUTO: the estimator's own measured default kinds


def feature_kinds(features: Any, auto: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The ``features=`` option as a tuple of kinds: None -> (), ``"rdkit2d"`` ->
    ``("rdkit2d",)``, :data:`AUTO` -> ``auto`` (the caller's default), a list keeps its
    order; unknown or repeated kinds raise."""
    if features is None:
        return ()
    if isinstance(features, str) and features == AUTO:
        return tuple(auto)
    kinds = (features,) if isinstance(features, str) else features
    try:
        kinds = tuple(kinds)
    except TypeError:
        raise ValueError(f"features must be None, {AUTO!r}, one of {KINDS} or a list of "
                         f"them, got {features!r}") from None
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or len(set(kinds)) != len(kinds):
        what = f"unknown {unknown}" if unknown else "repeated kinds"
        raise ValueError(f"features must be None, {AUTO!r}, one of {KINDS} or a list of "
                         f"distinct ones; got {features!r} ({what})")
    return kinds


def raw_features(kinds: Sequence[str], smiles: Sequence[str], columns: np.ndarray | None,
                 n_jobs: int | None = None,
                 cache: dict[tuple[str, str], np.ndarray] | None = None,
                 molecules: Sequence[Any] | None = None) -> np.ndarray:
    """Unscaled features [n, F] float32 of valid canonical SMILES, ``kinds`` side by side;
    ``columns`` [n, F_user]: the caller's own (:data:`USER_KIND`), None without them;
    ``cache`` and ``molecules`` (the SMILES's RDKit molecules, parsed already): as in
    :func:`molecule_features`."""
    computed = [k for k in kinds if k != USER_KIND]
    values = molecule_features(computed, smiles, n_jobs, cache, molecules)
    blocks, start = [], 0
    for kind in kinds:
        if kind == USER_KIND:
            blocks.append(np.asarray(columns).astype(np.float32))
        else:
            width = len(feature_names(kind))
            blocks.append(values[:, start : start + width])
            start += width
    return np.concatenate(blocks, axis=1)


@dataclass(frozen=True, eq=False)
class FeatureSpec:
    """What a fitted model computes beside its encoder, and how it scales it.

    Attributes
    ----------
    kinds : tuple of str
        In column order (:data:`KINDS`).
    names : dict of str to list of str
        Column names per kind; for :data:`USER_KIND` the caller's column names.
    scaler : FeatureScaler
        Fitted on the training rows of all kinds together.
    rdkit_version : str
        The RDKit that computed the training features.
    """

    kinds: tuple[str, ...]
    names: dict[str, list[str]]
    scaler: FeatureScaler
    rdkit_version: str

    @property
    def n_features(self) -> int:
        return self.scaler.n_features

    @property
    def computed(self) -> bool:
        """Whether some of the features are computed from the molecules (not only the
        caller's columns): then a caller holding the molecules passes them."""
        return any(kind != USER_KIND for kind in self.kinds)

    def values(self, smiles: Sequence[str], columns: np.ndarray | None = None,
               n_jobs: int | None = None, molecules: Sequence[Any] | None = None
               ) -> np.ndarray:
        """Scaled features [n, F] float32 of valid canonical SMILES (and the caller's
        ``columns`` [n, F_user] when the kinds include :data:`USER_KIND`); ``molecules``:
        the SMILES's RDKit molecules, parsed already (:func:`molecule_features`)."""
        return self.scaler.transform(raw_features(self.kinds, smiles, columns, n_jobs,
                                                  molecules=molecules))

    def installed_differences(self) -> list[str]:
        """How the installed RDKit's feature sets differ from the saved ones ([] = none)."""
        problems = []
        for kind in self.kinds:
            if kind == USER_KIND:
                continue
            saved, installed = self.names[kind], feature_names(kind)
            if saved == installed:
                continue
            gone = [n for n in saved if n not in installed]
            new = [n for n in installed if n not in saved]
            detail = (f"missing {gone[:10]}" if gone else "") + \
                      ("; " if gone and new else "") + (f"new {new[:10]}" if new else "")
            problems.append(f"{kind}: the model was fitted with {len(saved)} features from "
                            f"RDKit {self.rdkit_version}, the installed RDKit "
                            f"{rdkit_version()} computes {len(installed)} "
                            f"({detail or 'same names in another order'})")
        return problems

    def to_dict(self) -> dict[str, Any]:
        return {"kinds": list(self.kinds), "names": {k: list(v) for k, v in self.names.items()},
                "scaler": self.scaler.to_dict(), "rdkit_version": self.rdkit_version}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        kinds = feature_kinds(data["kinds"])
        names = {str(k): [str(n) for n in v] for k, v in data["names"].items()}
        scaler = FeatureScaler.from_dict(data["scaler"])
        if set(names) != set(kinds):
            raise ValueError(f"names are given for {sorted(names)}, kinds are {list(kinds)}")
        width = sum(len(names[k]) for k in kinds)
        if width != scaler.n_features:
            raise ValueError(f"{width} feature names but a scaler for {scaler.n_features}")
        return cls(kinds, names, scaler, str(data["rdkit_version"]))
