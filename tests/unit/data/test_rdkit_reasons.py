"""One message for a rejected SMILES, wherever it is met, and RDKit's log left as it was."""

from __future__ import annotations

import pytest
from rdkit import rdBase

from exlm_chem.data.rdkit_reasons import UNPARSABLE_REASON, parse_failure, rdkit_reason


@pytest.mark.parametrize(
    ("smiles", "reason"),
    [
        ("CCO", None),
        ("c1ccccc1O", None),
        ("C1CC", "SMILES Parse Error: unclosed ring for input: 'C1CC'"),
        ("C(C)(C)(C)(C)C", "Explicit valence for atom # 0 C, 5, is greater than permitted"),
    ],
)
def test_parse_failure_is_none_or_rdkits_message(smiles: str, reason: str | None) -> None:
    assert parse_failure(smiles) == reason


def test_parse_failure_keeps_two_distinct_lines_without_the_echo() -> None:
    reason = parse_failure("CC((")
    assert reason is not None
    assert reason.count("; ") == 1 and reason.startswith("SMILES Parse Error:")
    assert "~" not in reason and "^" not in reason


def test_reasons_without_capture_error_log(monkeypatch: pytest.MonkeyPatch) -> None:
    # RDKit before 2026.09 has no CaptureErrorLog: reasons come from DetectChemistryProblems.
    monkeypatch.delattr(rdBase, "CaptureErrorLog", raising=False)
    assert rdkit_reason("C(C)(C)(C)(C)C") == (
        "Explicit valence for atom # 0 C, 5, is greater than permitted"
    )
    assert rdkit_reason("c1cccc1").startswith("Can't kekulize mol.")
    assert rdkit_reason("CC((") == UNPARSABLE_REASON


def test_splitter_and_input_check_give_the_same_reason() -> None:
    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.data.splits import random_split
    from exlm_chem.errors import InvalidSmilesError

    bad = "C(C)(C)(C)(C)C"
    expected = parse_failure(bad)
    assert check_smiles(["CCO", bad]).reasons == [None, expected]
    with pytest.raises(InvalidSmilesError) as info:
        random_split(["CCO", bad, "CCN"])
    assert [r.reason for r in info.value.rows] == [expected]


def _touch_every_rdkit_reader() -> None:
    from exlm_chem.analysis.explanation import _rdkit_valid
    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.data.fragments import fragment_token_groups
    from exlm_chem.data.hygiene import canonical_smiles
    from exlm_chem.data.rdkit_reasons import quiet_mol
    from exlm_chem.data.tokenizer import SmilesTokenizer

    check_smiles(["C1CC", "CCO"])
    canonical_smiles("C1CC")
    quiet_mol("C1CC")
    _rdkit_valid("C1CC")
    fragment_token_groups("C1CC", SmilesTokenizer())


@pytest.mark.parametrize("user_setting", ["enabled", "disabled"])
def test_rdkit_log_settings_of_the_user_survive(user_setting: str) -> None:
    from rdkit import RDLogger

    toggle = RDLogger.EnableLog if user_setting == "enabled" else RDLogger.DisableLog
    before = rdBase.LogStatus()
    try:
        toggle("rdApp.error")
        wanted = rdBase.LogStatus()
        _touch_every_rdkit_reader()
        assert rdBase.LogStatus() == wanted
    finally:
        (RDLogger.EnableLog if "rdApp.error:enabled" in before else RDLogger.DisableLog)(
            "rdApp.error")


def test_check_smiles_gives_the_canonical_form_the_model_reads():
    from exlm_chem.data.featurize import check_smiles

    # surrounding whitespace is stripped (" CC"); whitespace inside a SMILES is not ("C C")
    checked = check_smiles(["OCC", "C1CC", "[NH3+]CC([O-])=O", " CC", "C C", "c1ccccc1"])
    assert checked.canonical == ["CCO", None, "[NH3+]CC(=O)[O-]", "CC", None, "c1ccccc1"]
    assert checked.valid.tolist() == [True, False, True, True, False, True]
