"""What every encoder row of the benchmark is fed: canonical SMILES, rows kept in place."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.benchmark.tasks import ENCODER_SMILES, TaskData, with_canonical_smiles


def _task(smiles: list[str]) -> TaskData:
    labels = np.arange(len(smiles), dtype=np.float64)[:, None]
    rows = np.arange(len(smiles))
    return TaskData("toy", smiles, labels, rows[:1], rows[1:2], rows[2:], "a" * 64)


def test_canonical_smiles_keep_rows_labels_and_splits():
    data = _task(["OCC", "C(C)O", "c1ccccc1O", "[NH3+]CC(=O)[O-]"])
    out = with_canonical_smiles(data)
    assert out.smiles == ["CCO", "CCO", "Oc1ccccc1", "[NH3+]CC(=O)[O-]"]
    assert out.labels is data.labels and out.test is data.test
    assert out.data_sha256 == data.data_sha256 and data.smiles[0] == "OCC"  # a new record
    assert ENCODER_SMILES == "rdkit-canonical"


def test_a_row_rdkit_cannot_write_is_named():
    with pytest.raises(ValueError, match=r"toy: rows \[1\] passed the loader"):
        with_canonical_smiles(_task(["CCO", "C1CC", "CC"]))
