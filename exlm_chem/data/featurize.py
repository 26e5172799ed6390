"""User SMILES checked, one reason per bad row: the one SMILES check at the edge of a call.

Every call that reads user SMILES (fit, predict, transform, embed, the command line and
screening) checks them here once, at the edge of the call
(:meth:`~exlm_chem.model.molecule_model.MoleculeModel.prepare`); the row mask and reasons
travel with the outputs, so that no caller parses them again. Bad
rows are never dropped: :func:`check_smiles` returns a mask and a reason per row so that
callers can keep their outputs aligned with their inputs. The molecules the check parsed
are handed on when asked for (descriptors, the tree head), so nothing parses a SMILES twice.

:func:`smiles_sequence` is the one check of the argument itself: every public entry point
that takes many SMILES refuses a single string with its ``TypeError`` before iterating it
(a bare ``"CCO"`` would otherwise be three molecules, C, C and O).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from exlm_chem.data.rdkit_reasons import Canonical, canonical_parse
from exlm_chem.errors import InvalidRow, InvalidSmilesError

_T = TypeVar("_T")

MAX_SMILES_CHARS = 2000  # longer strings are rejected: no molecule of interest is that long
UNKNOWN_SHARE = 0.5  # molecules with more of their tokens [UNK] than this are warned about
_WHITESPACE = re.compile(r"\s")
_SURROGATE = re.compile("[\ud800-\udfff]")


class UnknownTokensWarning(UserWarning):
    """Some molecules are made mostly of tokens outside the model's vocabulary."""


class _Tokenizer(Protocol):  # what warn_unknown_tokens reads of a SmilesTokenizer
    def unknown_fraction(self, smiles_list: Sequence[str]) -> np.ndarray: ...


def smiles_sequence(smiles: _T, name: str = "X") -> _T:
    """``smiles`` itself, once it is not a single ``str`` or ``bytes``.

    Parameters
    ----------
    smiles : any
        The argument that should hold many SMILES (a list, array, Series, iterator...).
    name : str
        Its name in the caller's signature, for the message.

    Raises
    ------
    TypeError
        A single string or bytes: iterating it would read each character as a molecule.
    """
    if isinstance(smiles, str | bytes):
        shown = repr(smiles) if len(repr(smiles)) <= 40 else f"{repr(smiles)[:37]}..."
        raise TypeError(f"{name} must be a sequence of SMILES strings, got a single string; "
                        f"wrap it in a list: [{shown}]")
    return smiles


class CheckedSmiles(NamedTuple):
    valid: np.ndarray  # [N] bool
    reasons: list[str | None]  # None for valid rows, else why the row was rejected
    # RDKit canonical SMILES of valid rows (None for the others): what the model reads,
    # as in pre-training, so a molecule's output does not depend on how it is written
    canonical: list[str | None]
    # RDKit molecules of the valid rows in canonical atom order, in RDKit's binary form
    # (rdkit_reasons.Canonical; None for the other rows), when the caller asked for them
    # (check_smiles(keep_molecules=True)); else None
    molecules: list[bytes | None] | None = None

    @property
    def rows(self) -> np.ndarray:
        """[n_valid] positions of the valid rows."""
        return np.flatnonzero(self.valid)

    @property
    def valid_smiles(self) -> list[str]:
        """The canonical SMILES of the valid rows, in row order."""
        return [self.canonical[i] for i in self.rows]

    @property
    def valid_molecules(self) -> list[bytes | None] | None:
        """The molecules of the valid rows, in row order; None when they were not kept."""
        return None if self.molecules is None else [self.molecules[i] for i in self.rows]


def check_smiles(smiles: Sequence[Any], max_chars: int = MAX_SMILES_CHARS,
                 keep_molecules: bool = False) -> CheckedSmiles:
    """Validate each entry: a non-empty string RDKit can parse, at most ``max_chars`` long.

    Leading and trailing whitespace is removed first, as RDKit, chemprop and pandas users
    expect (212 rows of Delaney's ESOL file end in a space). A SMILES is one word:
    whitespace followed by more text makes the row invalid, because RDKit would read that
    text as the molecule's name and the tokenizer would pass it to the model. Strings that
    cannot be encoded (lone surrogates) are invalid rows too; no entry ever raises.
    RDKit parses each distinct SMILES once per call; with ``keep_molecules`` the parsed
    molecules are kept (:attr:`CheckedSmiles.molecules`) for the callers that read them
    (descriptors, the tree head) instead of parsing the SMILES again. A single string
    raises :func:`smiles_sequence`'s ``TypeError``.
    """
    smiles_sequence(smiles, "smiles")
    valid = np.zeros(len(smiles), dtype=bool)
    reasons: list[str | None] = []
    canonical: list[str | None] = [None] * len(smiles)
    molecules: list[bytes | None] | None = [None] * len(smiles) if keep_molecules else None
    parsed: dict[str, Canonical] = {}
    for i, s in enumerate(smiles):
        if not isinstance(s, str):
            reason = f"not a string ({type(s).__name__})"
        elif not (word := s.strip()):
            reason = "empty SMILES"
        elif len(word) > max_chars:
            reason = f"too long ({len(word)} characters > {max_chars})"
        elif space := _WHITESPACE.search(word):
            position = space.start() + len(s) - len(s.lstrip())  # in the entry as given
            reason = (f"whitespace {space.group()!r} at position {position}: a SMILES "
                      "is one word, and text after it is not part of the molecule")
        elif surrogate := _SURROGATE.search(word):
            reason = (f"not encodable text (lone surrogate {surrogate.group()!r} at "
                      f"position {surrogate.start()})")
        else:
            if word not in parsed:
                parsed[word] = canonical_parse(word, keep_molecules)
            canonical[i], molecule, reason = parsed[word]
            if molecules is not None:
                molecules[i] = molecule
            valid[i] = reason is None
        reasons.append(reason)
    return CheckedSmiles(valid, reasons, canonical, molecules)


def warn_unknown_tokens(tokenizer: _Tokenizer, smiles: Sequence[str],
                        rows: Sequence[int] | None = None, share: float = UNKNOWN_SHARE,
                        stacklevel: int = 3) -> np.ndarray:
    """Warn about molecules whose tokens are all, or more than ``share``, ``[UNK]``.

    The model sees next to nothing of such a molecule (``[13CH4]`` and ``[Uuo]`` get the
    same output), so the warning counts them and names a few. ``rows`` are the positions
    to report (default ``0..N-1``). Returns the [N] bool mask of flagged molecules.
    """
    fraction = tokenizer.unknown_fraction(smiles)  # [N]
    flagged = fraction > share
    if flagged.any():
        where = np.flatnonzero(flagged)
        positions = np.asarray(rows if rows is not None else range(len(smiles)))[where]
        n_all = int((fraction[where] == 1).sum())
        example = smiles[int(where[0])]
        more = f" and {where.size - 10} more" if where.size > 10 else ""
        warnings.warn(
            f"{where.size} of {len(smiles)} molecules are mostly tokens unknown to the model "
            f"([UNK]): {n_all} entirely, {where.size - n_all} for more than {share:.0%} of "
            f"their tokens (rows {positions[:10].tolist()}{more}; e.g. {example!r:.60}). "
            "Their outputs say little about them", UnknownTokensWarning, stacklevel=stacklevel)
    return flagged


def raise_for_invalid(smiles: Sequence[Any], checked: CheckedSmiles) -> None:
    if not checked.valid.all():
        bad = np.flatnonzero(~checked.valid)
        raise InvalidSmilesError([InvalidRow(int(i), smiles[i], checked.reasons[i]) for i in bad])

