"""Corpus hygiene: keep benchmark valid/test molecules out of pre-training.

Molecules are compared as RDKit canonical SMILES: :func:`benchmark_heldout_molecules`
gives the canonical valid/test molecules of every split the runner makes, and corpus
preparation (:mod:`exlm_chem.data.corpus_prepare`), which canonicalises every line
anyway (:func:`canonicalize`), drops the lines among them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.data.process_map import map_chunks

logger = logging.getLogger(__name__)

# Fewest SMILES worth a worker process: canonicalising is cheap per molecule, so under
# 20k SMILES the pool's start-up costs more than it saves and all run in-process.
_MIN_PER_WORKER = 10_000


def canonical_smiles(smiles: str) -> str | None:
    """The form the models read (:func:`~exlm_chem.data.rdkit_reasons.canonical_or_failure`);
    None where RDKit cannot parse it."""
    from exlm_chem.data.rdkit_reasons import canonical_or_failure

    return canonical_or_failure(smiles)[0]


def _canonical_many(smiles: Sequence[str]) -> list[str | None]:
    return [canonical_smiles(s) for s in smiles]


def canonicalize(smiles: Sequence[str], n_jobs: int = 1) -> list[str | None]:
    """Canonical SMILES (None where RDKit cannot parse), in input order.

    ``n_jobs``: worker processes for large inputs, ``-1`` every core this
    process may use (:func:`~exlm_chem.data.process_map.map_chunks`).
    """
    return map_chunks(_canonical_many, smiles_sequence(smiles, "smiles"), n_jobs=n_jobs,
                      min_per_worker=_MIN_PER_WORKER, task="canonicalising SMILES")


def runner_split_modes(seeds: Sequence[int] = (0, 1, 2)) -> list[tuple[str, int]]:
    """Every ``(split, seed)`` the benchmark runner can evaluate on with ``seeds``.

    Splits that do not move with the seed (the deterministic scaffold splits) appear
    once, with seed 0, exactly as the runner loads them.
    """
    from exlm_chem.data.split_modes import SPLITS, split_depends_on_seed

    modes = [(split, int(seed)) for split in SPLITS
             for seed in (seeds if split_depends_on_seed(split) else (0,))]
    return list(dict.fromkeys(modes))  # a repeated seed counts once


def benchmark_heldout_molecules(
    names: Sequence[str] | None = None,
    n_jobs: int = 1,
    splits: Sequence[tuple[str, int]] | None = None,
) -> dict[str, set[str]]:
    """Canonical SMILES of the valid and test molecules of each benchmark task.

    Parameters
    ----------
    names : sequence of str, optional
        Tasks (default: every MoleculeNet task of the registry).
    n_jobs : int
        Processes for canonicalisation (``-1``: every core this process may use).
    splits : sequence of (split, seed), optional
        The split modes whose valid/test parts are held out, each split as the benchmark
        splits it (:func:`~exlm_chem.data.split_modes.split_rows`). Default:
        :func:`runner_split_modes` (every split the runner offers, seeds 0-2), so that no
        split the benchmark may be run on saw its evaluation molecules in pre-training.

    Returns
    -------
    dict
        Task name -> canonical SMILES of the union of its held-out parts.
    """
    from exlm_chem.data.moleculenet import dataset_names, load_moleculenet
    from exlm_chem.data.split_modes import split_rows

    out: dict[str, set[str]] = {}
    for name in names or dataset_names():
        held: set[str] = set()
        smiles = list(load_moleculenet(name).smiles)  # the rows the benchmark splits
        for split, seed in splits or runner_split_modes():
            parts = split_rows(smiles, split, seed)
            held.update(smiles[i] for i in np.concatenate([parts.valid, parts.test]))
        out[name] = {c for c in canonicalize(sorted(held), n_jobs=n_jobs) if c is not None}
        logger.info("hygiene: %s holds out %d molecules over %d split modes", name,
                    len(out[name]), len(splits or runner_split_modes()))
    return out
