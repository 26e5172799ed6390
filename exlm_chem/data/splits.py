"""Train/valid/test splits of a list of SMILES: scaffold, scaffold-balanced and random.

Three protocols, which give very different benchmark numbers and must never be mixed in
one table (a result always states its split):

``scaffold_split``
    The deterministic Bemis-Murcko scaffold split of Uni-Mol/GEM, used by the ExLM paper's
    headline table (``include_chirality=True``, the default here). With
    ``include_chirality=False`` it is DeepChem's ``ScaffoldSplitter``, index for index.
    It has no seed: "3 seeds" in the paper means three model seeds on this one split.
``scaffold_balanced_split``
    chemprop (v1) ``scaffold_balanced``: scaffold groups in a seeded random order,
    groups too big for valid/test placed first. A different split for every seed.
``random_split``
    A seeded permutation cut 80/10/10.
``held_out_split``
    The estimators' own held-out molecules inside a fit: whole scaffold groups, as
    ``scaffold_balanced_split`` places them, with the fit's seed (:class:`HeldOutSplit`).

The benchmark's three return :class:`SplitIndices`, three ``np.int64`` arrays of row positions
into the input list, **in the order the algorithm placed them** (not sorted): scaffold
group by scaffold group in placement order, ascending row inside a group; for
``random_split`` the permutation order. Sort them yourself if you need sorted indices.

Invalid input never reaches a split: ``None``, non-strings, empty strings and SMILES that
``rdkit.Chem.MolFromSmiles`` rejects raise :class:`InvalidSmilesError`, which names every
bad row and the reason. RDKit is imported inside the functions, so importing this module
stays cheap.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.data.process_map import map_chunks, resolve_n_jobs
from exlm_chem.data.rdkit_reasons import rdkit_reason
from exlm_chem.errors import InvalidRow, InvalidSmilesError

__all__ = [
    "HeldOutSplit",
    "InvalidRow",
    "InvalidSmilesError",
    "SplitIndices",
    "held_out_split",
    "most_held_out",
    "murcko_scaffolds",
    "random_split",
    "scaffold_balanced_split",
    "scaffold_groups",
    "scaffold_split",
]

Fractions = tuple[float, float, float]

# Fewest distinct SMILES that pay for a worker process (start-up, RDKit import): below
# twice this, n_jobs > 1 silently runs in-process.
_MIN_PER_WORKER = 2000


class SplitIndices(NamedTuple):
    """Row positions of the three parts of a split (``np.int64``, algorithm order)."""

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray


# --------------------------------------------------------------------------- validation


def _check_fractions(fractions: Iterable[float]) -> Fractions:
    try:
        values = tuple(float(f) for f in fractions)
    except (TypeError, ValueError) as err:
        raise ValueError(f"fractions must be 3 numbers, got {fractions!r}") from err
    if len(values) != 3:
        raise ValueError(f"fractions must be 3 numbers (train, valid, test), got {values}")
    if any(not math.isfinite(f) or f < 0 for f in values):
        raise ValueError(f"fractions must be finite and non-negative, got {values}")
    if abs(sum(values) - 1.0) > 1e-6:
        raise ValueError(f"fractions must sum to 1, got {values} (sum {sum(values)})")
    return values  # type: ignore[return-value]


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _structural_problem(value: Any) -> str | None:
    """Why ``value`` cannot even be handed to RDKit, or None if it is a non-empty str."""
    if value is None:
        return "missing (None)"
    if not isinstance(value, str):
        return f"not a string ({type(value).__name__} {value!r})"
    if not value.strip():
        return "empty SMILES"
    return None


def _as_list(smiles: Iterable[Any]) -> list[Any]:
    return list(smiles_sequence(smiles, "smiles"))


# --------------------------------------------------------------------------- scaffolds


def _scaffolds_of_chunk(chunk: Sequence[str], include_chirality: bool | None) -> list[str | None]:
    """Scaffold SMILES of each string in ``chunk``; None where RDKit rejects the SMILES.

    This is what ``MurckoScaffoldSmiles(mol=mol, includeChirality=...)`` computes (it calls
    the same two functions), minus a Python wrapper per molecule; every molecule is parsed
    exactly once. ``include_chirality=None`` only checks that RDKit accepts each SMILES
    (valid rows get ``""``). Module level so a worker process can import it.
    """
    from rdkit import Chem, rdBase
    from rdkit.Chem.Scaffolds.MurckoScaffold import GetScaffoldForMol

    parse = Chem.MolFromSmiles
    to_smiles = Chem.MolToSmiles
    out: list[str | None] = []
    with rdBase.BlockLogs():  # rejected rows are reported by our own error instead
        if include_chirality is None:
            return [None if parse(s) is None else "" for s in chunk]
        for s in chunk:
            mol = parse(s)
            out.append(
                None if mol is None else to_smiles(GetScaffoldForMol(mol), include_chirality)
            )
    return out


def _scaffolds_of_unique(
    unique: list[str], include_chirality: bool | None, n_jobs: int | None
) -> list[str | None]:
    return map_chunks(
        functools.partial(_scaffolds_of_chunk, include_chirality=include_chirality),
        unique, n_jobs=n_jobs, min_per_worker=_MIN_PER_WORKER, task="computing scaffolds",
    )


def murcko_scaffolds(
    smiles: Iterable[str], *, include_chirality: bool = True, n_jobs: int = 1
) -> list[str]:
    """Bemis-Murcko scaffold SMILES of every molecule, in input order.

    Identical to ``rdkit.Chem.Scaffolds.MurckoScaffold.MurckoScaffoldSmiles(mol=...,
    includeChirality=include_chirality)``; acyclic molecules get the empty string.

    Parameters
    ----------
    smiles
        SMILES strings (list, tuple, numpy array, pandas Series...).
    include_chirality
        Write stereo in the scaffold SMILES (enantiomeric scaffolds are then different).
    n_jobs
        Worker processes for large inputs (``-1``: every core this process may use;
        :func:`~exlm_chem.data.process_map.map_chunks`). The result does not depend on
        it.

    Returns
    -------
    list of str
        One scaffold SMILES per input row.

    Raises
    ------
    InvalidSmilesError
        If any row is None, not a string, empty or rejected by RDKit (all rows listed).
    """
    return _checked_scaffolds(_as_list(smiles), bool(include_chirality), n_jobs)


def _checked_scaffolds(values: list[Any], include_chirality: bool | None, n_jobs: int) -> list[str]:
    """Validate every row, then compute scaffolds (``None``: validate only, all ``""``)."""
    resolve_n_jobs(n_jobs)  # a bad n_jobs fails before any work, whatever the input
    bad: list[InvalidRow] = []
    # Identical strings share one RDKit computation (MUV, ToxCast repeat some rows).
    slot_of: dict[str, int] = {}
    slots: list[int] = []  # row -> position in ``unique``; -1 for a structural problem
    for i, value in enumerate(values):
        problem = _structural_problem(value)
        if problem is not None:
            bad.append(InvalidRow(i, value, problem))
            slots.append(-1)
        else:
            slots.append(slot_of.setdefault(str(value), len(slot_of)))
    unique = list(slot_of)
    scaffolds = _scaffolds_of_unique(unique, include_chirality, n_jobs)

    rejected = {k for k, s in enumerate(scaffolds) if s is None}
    if rejected:
        reasons = {k: rdkit_reason(unique[k]) for k in rejected}
        bad.extend(
            InvalidRow(i, values[i], reasons[k]) for i, k in enumerate(slots) if k in rejected
        )
    if bad:
        raise InvalidSmilesError(sorted(bad, key=lambda r: r.row), action="cannot be split")
    return [scaffolds[k] for k in slots]  # type: ignore[misc]


def scaffold_groups(
    smiles: Iterable[str], *, include_chirality: bool = True, n_jobs: int = 1
) -> dict[str, list[int]]:
    """Row positions grouped by Bemis-Murcko scaffold SMILES.

    Parameters
    ----------
    smiles, include_chirality, n_jobs
        As in :func:`murcko_scaffolds`.

    Returns
    -------
    dict of str to list of int
        Scaffold SMILES -> ascending row positions; keys in order of first appearance.
        Acyclic molecules share the key ``""``.

    Raises
    ------
    InvalidSmilesError
        If any row is not a valid SMILES.
    """
    groups: dict[str, list[int]] = {}
    for i, scaffold in enumerate(
        murcko_scaffolds(smiles, include_chirality=include_chirality, n_jobs=n_jobs)
    ):
        groups.setdefault(scaffold, []).append(i)
    return groups


def _indices(parts: list[list[int]]) -> np.ndarray:
    return np.fromiter((i for part in parts for i in part), dtype=np.int64)


# --------------------------------------------------------------------------- splits


def scaffold_split(
    smiles: Iterable[str],
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    include_chirality: bool = True,
    *,
    n_jobs: int = 1,
) -> SplitIndices:
    """Deterministic Bemis-Murcko scaffold split (Uni-Mol/GEM; DeepChem without chirality).

    Scaffold groups are taken from the largest to the smallest (ties: the group whose
    first row comes later goes first). A group goes to train if train stays within
    ``fractions[0] * N`` rows, else to valid if train + valid stays within
    ``(fractions[0] + fractions[1]) * N``, else to test; later, smaller groups may still
    fill train or valid. With ``include_chirality=False`` the result equals
    ``deepchem.splits.ScaffoldSplitter().split(...)`` exactly, order included.

    The split depends on the row order of the input, so pin data files by checksum.

    Parameters
    ----------
    smiles
        SMILES strings; all must be valid.
    fractions
        Train, valid, test fractions: non-negative, summing to 1.
    include_chirality
        Stereo-aware scaffolds (True: the protocol of the ExLM paper's table).
    n_jobs
        Worker processes for computing scaffolds (see :func:`murcko_scaffolds`); the split
        does not depend on it.

    Returns
    -------
    SplitIndices
        Row positions, group by group in placement order, ascending within a group.

    Raises
    ------
    ValueError
        Bad ``fractions``; :class:`InvalidSmilesError` for invalid SMILES rows.
    """
    f_train, f_valid, _ = _check_fractions(fractions)
    values = _as_list(smiles)
    n = len(values)
    groups = scaffold_groups(values, include_chirality=include_chirality, n_jobs=n_jobs)
    ordered = sorted(groups.values(), key=lambda g: (len(g), g[0]), reverse=True)

    # Same float expressions as DeepChem, so boundary cases round the same way.
    train_cutoff = f_train * n
    valid_cutoff = (f_train + f_valid) * n
    return _place_groups(ordered, train_cutoff, valid_cutoff, valid_counts_train=True)


def scaffold_balanced_split(
    smiles: Iterable[str],
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    include_chirality: bool = False,
    *,
    n_jobs: int = 1,
) -> SplitIndices:
    """Seeded, balanced scaffold split with chemprop (v1) ``scaffold_balanced`` semantics.

    Groups larger than half the valid size or half the test size are "big". Big groups,
    then small groups, each in a random order drawn from ``seed``, fill train while it
    stays within ``fractions[0] * N``, else valid while valid stays within
    ``fractions[1] * N``, else test. Each seed gives its own split; the same seed always
    the same one. Not comparable with :func:`scaffold_split` numbers.

    ``smiles``, ``fractions``, ``n_jobs`` and the result are as in :func:`scaffold_split`;
    ``seed`` is a non-negative integer for ``np.random.default_rng``, and
    ``include_chirality`` defaults to chemprop's False.
    """
    f_train, f_valid, f_test = _check_fractions(fractions)
    seed = _check_seed(seed)
    values = _as_list(smiles)
    n = len(values)
    groups = list(
        scaffold_groups(values, include_chirality=include_chirality, n_jobs=n_jobs).values()
    )
    train_size, valid_size, test_size = f_train * n, f_valid * n, f_test * n
    big = [g for g in groups if len(g) > valid_size / 2 or len(g) > test_size / 2]
    small = [g for g in groups if not (len(g) > valid_size / 2 or len(g) > test_size / 2)]
    rng = np.random.default_rng(seed)
    ordered = [big[k] for k in rng.permutation(len(big))]
    ordered += [small[k] for k in rng.permutation(len(small))]

    return _place_groups(ordered, train_size, valid_size, valid_counts_train=False)


def _place_groups(ordered: list[list[int]], train_limit: float, valid_limit: float,
                  valid_counts_train: bool) -> SplitIndices:
    """Each group in turn to train while it fits, else to valid while it fits, else test.

    DeepChem compares train + valid rows so far with a cumulative cutoff
    (``valid_counts_train``); chemprop's balanced split compares the valid rows alone.
    """
    train: list[list[int]] = []
    valid: list[list[int]] = []
    test: list[list[int]] = []
    n_train = n_valid = 0
    for group in ordered:
        size = len(group)
        if n_train + size <= train_limit:
            train.append(group)
            n_train += size
        elif (n_train if valid_counts_train else 0) + n_valid + size <= valid_limit:
            valid.append(group)
            n_valid += size
        else:
            test.append(group)
    return SplitIndices(_indices(train), _indices(valid), _indices(test))


def random_split(
    n_or_smiles: int | Iterable[str],
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> SplitIndices:
    """Seeded random split: a permutation of the rows cut into train, valid and test.

    Train gets ``floor(fractions[0] * N)`` rows, valid ``floor((fractions[0] +
    fractions[1]) * N)`` minus that, test the rest (floors tolerate float round-off, so
    0.8 * 10 gives 8).

    Parameters
    ----------
    n_or_smiles
        The number of rows, or the SMILES themselves (then they are validated first).
    fractions
        Train, valid, test fractions: non-negative, summing to 1.
    seed
        Non-negative integer for ``np.random.default_rng``.

    Returns
    -------
    SplitIndices
        Row positions in permutation order.
    """
    f_train, f_valid, _ = _check_fractions(fractions)
    seed = _check_seed(seed)
    if isinstance(n_or_smiles, int | np.integer) and not isinstance(n_or_smiles, bool):
        n = int(n_or_smiles)
        if n < 0:
            raise ValueError(f"number of rows must be non-negative, got {n}")
    else:
        n = len(_checked_scaffolds(_as_list(n_or_smiles), None, n_jobs=1))
    order = np.random.default_rng(seed).permutation(n).astype(np.int64)
    n_train = min(n, math.floor(f_train * n + 1e-9))
    n_train_valid = min(n, math.floor((f_train + f_valid) * n + 1e-9))
    return SplitIndices(order[:n_train], order[n_train:n_train_valid], order[n_train_valid:])


_MAX_OVERSHOOT = 2.0  # a held-out part over this multiple of the share is drawn at random


class HeldOutSplit(NamedTuple):
    """What :func:`held_out_split` draws."""

    seed: int  # the fit's seed: member seeds, the trees and ``tta`` views derive from it
    train_rows: np.ndarray  # [n - n_valid] int, sorted
    valid_rows: np.ndarray  # [n_valid] int, sorted


def most_held_out(n_rows: int, validation_fraction: float) -> int:
    """The most molecules :func:`held_out_split` holds out of ``n_rows``."""
    return int(_MAX_OVERSHOOT * round(validation_fraction * n_rows))


def held_out_split(smiles: Sequence[str], random_state: int | np.random.RandomState | None,
                   validation_fraction: float) -> HeldOutSplit:
    """The estimators' seed and held-out rows of the fit's molecules.

    Parameters
    ----------
    smiles : sequence of str
        The valid (canonical) SMILES fit trains on.
    random_state : int, RandomState or None
        As the estimators take it; one integer is drawn from it (a RandomState advances).
    validation_fraction : float
        Share held out; none when that rounds to 0 molecules or to all of them.

    Returns
    -------
    HeldOutSplit
        The seed, and the training and held-out rows: whole scaffold groups in a seeded
        order fill the training part up to ``1 - validation_fraction`` of the molecules,
        the rest is held out (:func:`scaffold_balanced_split`). Where one scaffold holds so
        many molecules that this would hold out more than twice the share asked for (or
        none), the held-out rows are drawn at random.
    """
    from sklearn.utils import check_random_state

    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    n_rows = len(smiles)
    n_valid = round(validation_fraction * n_rows)
    if not 0 < n_valid < n_rows:
        return HeldOutSplit(seed, np.arange(n_rows), np.zeros(0, np.int64))
    parts = scaffold_balanced_split(smiles, (1 - validation_fraction, validation_fraction, 0.0),
                                    seed=seed)
    held = np.sort(np.concatenate([parts.valid, parts.test])).astype(np.int64)
    if 0 < len(held) <= _MAX_OVERSHOOT * n_valid and len(held) < n_rows:
        return HeldOutSplit(seed, np.sort(parts.train).astype(np.int64), held)
    order = np.random.default_rng(seed).permutation(n_rows)
    return HeldOutSplit(seed, np.sort(order[n_valid:]), np.sort(order[:n_valid]))
