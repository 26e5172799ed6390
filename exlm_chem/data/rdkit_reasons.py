"""Why RDKit rejects a SMILES, in RDKit's own words.

The dataset loader, the splitters and the input check of the estimators, ``embed`` and
``predict`` all name a rejected row with the message built here, so one bad SMILES reads
the same wherever it is met (e.g. ``Explicit valence for atom # 1 C, 5, is greater than
permitted``, or ``unclosed ring for input: 'c1ccc'``).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

__all__ = ["UNPARSABLE_REASON", "Canonical", "as_molecule", "canonical_or_failure",
           "canonical_parse", "parse_failure", "quiet_mol", "rdkit_reason"]

UNPARSABLE_REASON = "RDKit could not parse the SMILES"
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*")  # "[12:00:00] " before each RDKit log line
_POINTER = re.compile(r"[~^\s]+")  # the ~~~^ line RDKit prints under the echoed input


def rdkit_reason(smiles: str, log: str | None = None) -> str:
    """RDKit's message for a SMILES it rejects; call it only for rows that failed.

    ``log``: what RDKit logged while the caller parsed it (:func:`canonical_or_failure`
    captures it), so that the reason costs no second parse; None parses again to read it.
    With RDKit's error-log capture (RDKit >= 2026.09) the message is what RDKit logged,
    at most its first two distinct lines, without the echoed input. Otherwise the
    chemistry problems of the unsanitised molecule are listed, and failing that the
    generic :data:`UNPARSABLE_REASON`.
    """
    from rdkit import Chem, rdBase

    capture = getattr(rdBase, "CaptureErrorLog", None)
    if log is None and capture is not None:
        with capture() as captured:
            Chem.MolFromSmiles(smiles)
        log = captured.messages
    lines: list[str] = []
    for line in (log or "").splitlines():
        line = _LOG_PREFIX.sub("", line).strip().rstrip(":")
        if line and line != smiles and not _POINTER.fullmatch(line) and line not in lines:
            lines.append(line)
    if lines:
        return "; ".join(lines[:2])
    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(smiles, sanitize=False)
        problems = [p.Message() for p in Chem.DetectChemistryProblems(mol)] if mol else []
    return "; ".join(problems) if problems else UNPARSABLE_REASON


def quiet_mol(smiles: str) -> Any:
    """RDKit's molecule of ``smiles`` (None if unparsable), its log silenced for this call."""
    from rdkit import Chem, rdBase

    with rdBase.BlockLogs():  # restores the user's log settings afterwards
        return Chem.MolFromSmiles(smiles)


def parse_failure(smiles: str) -> str | None:
    """``None`` when RDKit parses ``smiles``, else :func:`rdkit_reason`; never raises."""
    return _parse(smiles)[1]


class Canonical(NamedTuple):
    """What one parse of a SMILES gives: :func:`canonical_parse`."""

    smiles: str | None  # RDKit canonical SMILES; None when invalid
    # the molecule in canonical atom order as RDKit's binary form (Mol.ToBinary), when
    # asked for and valid; else None. Kept as bytes: about 350 of them where a live Mol
    # takes some 30 kB, and Chem.Mol(data) rebuilds it without parsing (as_molecule)
    molecule: bytes | None
    reason: str | None  # None when valid, else why not


def canonical_or_failure(smiles: str) -> tuple[str | None, str | None]:
    """``(RDKit canonical SMILES, None)``, or ``(None, reason)`` as :func:`parse_failure`
    gives it; never raises. The canonical form is what the models read."""
    canonical, _, reason = canonical_parse(smiles)
    return canonical, reason


def canonical_parse(smiles: str, molecule: bool = False) -> Canonical:
    """The canonical SMILES of one parse, or the reason it fails; never raises.

    With ``molecule``, the parsed molecule comes too (binary, see :class:`Canonical`),
    its atoms renumbered into the canonical SMILES's order and sanitised again (no second
    parse): what RDKit would give for the canonical SMILES, so that descriptors computed
    from it do not depend on how the molecule was written (RDKit's ``Ipc`` depends on the
    atom order). It is None in the rare case RDKit cannot rebuild it; the SMILES stays
    valid.
    """
    from rdkit import Chem, rdBase

    mol, reason = _parse(smiles)
    if mol is None:
        return Canonical(None, None, reason)
    try:
        with rdBase.BlockLogs():
            canonical = Chem.MolToSmiles(mol)
    except Exception as err:  # parsed but not writable: still one invalid row, not a crash
        return Canonical(None, None, f"RDKit cannot write it as SMILES ({type(err).__name__})")
    return Canonical(canonical, _in_canonical_order(mol) if molecule else None, None)


def _in_canonical_order(mol: Any) -> bytes | None:
    """``mol`` renumbered into the atom order ``MolToSmiles`` just wrote it in and
    sanitised (ring information and the rest are not carried over by the renumbering),
    in RDKit's binary form."""
    from rdkit import Chem, rdBase

    try:
        with rdBase.BlockLogs():
            order = mol.GetPropsAsDict(True, True)["_smilesAtomOutputOrder"]
            renumbered = Chem.RenumberAtoms(mol, [int(i) for i in order])
            Chem.SanitizeMol(renumbered)
            return renumbered.ToBinary()
    except Exception:  # one molecule RDKit cannot rebuild: its features are missing (NaN)
        return None


def as_molecule(item: Any) -> Any:
    """An RDKit Mol from a molecule's binary form (:class:`Canonical`), from a SMILES
    (:func:`quiet_mol`: a parse), or ``item`` itself (a Mol, or None: a row without one)."""
    if isinstance(item, bytes):
        from rdkit import Chem

        return Chem.Mol(item)
    if isinstance(item, str):
        return quiet_mol(item)
    return item


def _parse(smiles: str) -> tuple[Any, str | None]:
    """``(molecule, None)`` or ``(None, reason)`` from one parse: RDKit's error log is
    captured while it parses (other log lines stay blocked), so a rejected SMILES needs
    no second parse for its reason."""
    from rdkit import Chem, rdBase

    capture = getattr(rdBase, "CaptureErrorLog", None)
    log = None
    try:
        with rdBase.BlockLogs():
            if capture is None:
                mol = Chem.MolFromSmiles(smiles)
            else:
                with capture() as captured:
                    mol = Chem.MolFromSmiles(smiles)
                log = captured.messages
    except Exception as err:  # an RDKit failure on one row must not end the batch
        return None, f"RDKit failed on it ({type(err).__name__})"
    if mol is not None:
        return mol, None
    try:
        return None, rdkit_reason(smiles, log)
    except Exception:  # RDKit's log of odd text may not decode; the row is still invalid
        return None, UNPARSABLE_REASON
