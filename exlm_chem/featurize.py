"""From user SMILES to pooled encoder states: input checks, batching, pooling.

Shared by fine-tuning, the estimators and embedding export. Bad rows are never dropped:
:func:`check_smiles` returns a mask and a reason per row so that callers can keep their
outputs aligned with their inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from exlm_chem.errors import InvalidRow, InvalidSmilesError

MAX_SMILES_CHARS = 2000  # longer strings are rejected: no molecule of interest is that long


class CheckedSmiles(NamedTuple):
    valid: np.ndarray  # [N] bool
    reasons: list[str | None]  # None for valid rows, else why the row was rejected


def check_smiles(smiles: Sequence[Any], max_chars: int = MAX_SMILES_CHARS) -> CheckedSmiles:
    """Validate each entry: a non-empty string RDKit can parse, at most ``max_chars`` long."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    valid = np.zeros(len(smiles), dtype=bool)
    reasons: list[str | None] = []
    for i, s in enumerate(smiles):
        if not isinstance(s, str):
            reason = f"not a string ({type(s).__name__})"
        elif not s.strip():
            reason = "empty SMILES"
        elif len(s) > max_chars:
            reason = f"too long ({len(s)} characters > {max_chars})"
        elif Chem.MolFromSmiles(s) is None:
            reason = "RDKit could not parse the SMILES"
        else:
            reason = None
            valid[i] = True
        reasons.append(reason)
    return CheckedSmiles(valid, reasons)


def raise_for_invalid(smiles: Sequence[Any], checked: CheckedSmiles) -> None:
    if not checked.valid.all():
        bad = np.flatnonzero(~checked.valid)
        raise InvalidSmilesError([InvalidRow(int(i), smiles[i], checked.reasons[i]) for i in bad])


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[np.ndarray]:
    """Index batches of similar lengths (less padding); every index appears once."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def pool(hidden: torch.Tensor, padding_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``bos``: the first BOS copy (position 0); ``mean``: mean over real tokens."""
    if pooling == "bos":
        return hidden[:, 0]
    if pooling == "mean":
        weights = padding_mask.unsqueeze(-1).to(hidden.dtype)  # [B, X, 1]
        return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)
    raise ValueError(f"pooling must be 'bos' or 'mean', got {pooling!r}")
