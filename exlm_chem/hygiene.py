"""Corpus hygiene: keep benchmark valid/test molecules out of pre-training.

Molecules are compared as RDKit canonical SMILES. Canonicalising two million corpus
lines is the slow part, so a cheap necessary condition comes first: two SMILES of the
same molecule have the same multiset of heavy-atom element symbols (read off the
tokens), so only corpus lines whose element multiset occurs among the excluded
molecules are canonicalised at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

import numpy as np

logger = logging.getLogger(__name__)

# the element symbol of an atom token: bracket atoms "[13C@@H+]", organic "Cl", aromatic "c"
_ATOM = re.compile(r"\[\d*([A-Za-z][a-z]?)|(Br|Cl|B|C|N|O|P|S|F|I|b|c|n|o|s|p)")


class HygieneReport(NamedTuple):
    keep: np.ndarray  # [n] bool, False for corpus lines that are excluded molecules
    n_corpus: int  # lines checked
    n_candidates: int  # lines whose element multiset matched (these were canonicalised)
    n_removed: int  # lines removed
    removed_by_task: dict[str, int]  # task name -> corpus lines matching its valid/test set


def element_key(smiles: str) -> str:
    """Sorted heavy-atom element symbols of a SMILES (hydrogens and charges ignored)."""
    symbols = []
    for bracket, organic in _ATOM.findall(smiles):
        symbol = (bracket or organic).capitalize()
        if symbol != "H":
            symbols.append(symbol)
    return ",".join(sorted(symbols))


def canonical_smiles(smiles: str) -> str | None:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToSmiles(mol)


def _canonical_many(smiles: Sequence[str]) -> list[str | None]:
    return [canonical_smiles(s) for s in smiles]


def canonicalize(smiles: Sequence[str], n_jobs: int = 1) -> list[str | None]:
    """Canonical SMILES (None where RDKit cannot parse), optionally over processes."""
    if n_jobs <= 1 or len(smiles) < 20_000:
        return _canonical_many(smiles)
    size = -(-len(smiles) // (n_jobs * 8))
    chunks = [smiles[i : i + size] for i in range(0, len(smiles), size)]
    with ProcessPoolExecutor(n_jobs) as pool:
        return [c for part in pool.map(_canonical_many, chunks) for c in part]


def exclude_molecules(
    corpus: Sequence[str], excluded: dict[str, set[str]], n_jobs: int = 1
) -> HygieneReport:
    """Mark corpus lines whose canonical SMILES is in any ``excluded`` set.

    ``excluded`` maps a task name to the canonical SMILES of its valid/test molecules.
    """
    all_excluded = set().union(*excluded.values()) if excluded else set()
    keys = {element_key(s) for s in all_excluded}
    candidates = [i for i, s in enumerate(corpus) if element_key(s) in keys]
    canon = canonicalize([corpus[i] for i in candidates], n_jobs=n_jobs)
    keep = np.ones(len(corpus), dtype=bool)
    by_task = dict.fromkeys(excluded, 0)
    for i, c in zip(candidates, canon, strict=True):
        if c is not None and c in all_excluded:
            keep[i] = False
            for task, members in excluded.items():
                by_task[task] += c in members
    report = HygieneReport(keep, len(corpus), len(candidates), int((~keep).sum()), by_task)
    logger.info(
        "corpus hygiene: %d of %d lines removed (%d canonicalised); per task %s",
        report.n_removed,
        report.n_corpus,
        report.n_candidates,
        by_task,
    )
    return report


def benchmark_heldout_molecules(
    names: Sequence[str] | None = None, n_jobs: int = 1
) -> dict[str, set[str]]:
    """Canonical SMILES of the valid and test molecules of each benchmark task.

    Uses the benchmark's default split (deterministic scaffold split, chirality on).
    """
    from exlm_chem.moleculenet import dataset_names, load_moleculenet
    from exlm_chem.splits import scaffold_split

    out: dict[str, set[str]] = {}
    for name in names or dataset_names():
        data = load_moleculenet(name)
        split = scaffold_split(data.smiles)
        held = [data.smiles[i] for i in np.concatenate([split.valid, split.test])]
        out[name] = {c for c in canonicalize(held, n_jobs=n_jobs) if c is not None}
    return out
