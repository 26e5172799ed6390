"""The regression sets (ESOL, FreeSolv, Lipophilicity): registry, checksums, loading and
invalid rows, on the shared mirror (../shared/data/regression, beside moleculenet/)."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.data.download import ChecksumError
from exlm_chem.data.moleculenet import dataset_names, get_spec, load_moleculenet, regression_names

# the uncompressed-content sha256 of each file, as shared/data/regression/SOURCES.md lists it
SOURCES_SHA256 = {
    "esol": "8c06a76f0c6487d29ab0f903e6a7a7139f189ab3c1178f159c8be8964602f189",
    "freesolv": "ab5895d914ee87cb563bd7b9611e869527bba45bec6b014d34dc495a0f9dcb72",
    "lipo": "aed41590cb30609d51d8e08ad3ff06495a76e80e211358801f596b10da69bacd",
}
# rows, first label, last label (file order), label column
EXPECTED = {
    "esol": (1128, -0.77, -4.522, "measured log solubility in mols per litre"),
    "freesolv": (642, -11.01, -5.06, "expt"),
    "lipo": (4200, 3.54, 2.7, "exp"),
}


@pytest.fixture(scope="module")
def regression_dir(moleculenet_dir: Path) -> Path:
    path = moleculenet_dir.parent / "regression"
    assert path.is_dir(), f"regression mirror not found at {path}"
    return path


def test_registry() -> None:
    assert regression_names() == ("esol", "freesolv", "lipo")
    assert not set(regression_names()) & set(dataset_names())  # classification list unchanged
    for name in regression_names():
        spec = get_spec(name)
        assert spec.task_type == "regression" and spec.folder == "regression"
        assert spec.task_columns == (EXPECTED[name][3],)
        assert [r.sha256_content for r in spec.revisions] == [SOURCES_SHA256[name]]
    assert get_spec("BACE").task_type == "classification"
    with pytest.raises(ValueError, match=r"valid names: bace, .*esol, freesolv, lipo"):
        get_spec("delaney")


@pytest.mark.parametrize("name", ["esol", "freesolv", "lipo"])
def test_mirror_loads_verified_through_the_env_search(name: str, regression_dir: Path) -> None:
    # $EXLM_CHEM_DATA names moleculenet/: the regression folder beside it is found
    data = load_moleculenet(name)
    rows, first, last, _ = EXPECTED[name]
    assert data.path == regression_dir / f"{name}.csv.gz"
    assert data.sha256 == SOURCES_SHA256[name] and data.revision == "s3"
    raw = gzip.decompress(data.path.read_bytes())
    assert hashlib.sha256(raw).hexdigest() == SOURCES_SHA256[name]
    assert len(data.smiles) == rows and data.invalid == []
    assert data.labels.shape == (rows, 1) and data.labels.dtype == np.float32
    assert data.labels[0, 0] == pytest.approx(first) and data.labels[-1, 0] == pytest.approx(last)
    assert np.isfinite(data.labels).all()


def test_esol_smiles_lose_the_trailing_space_of_the_file(regression_dir: Path) -> None:
    # 212 upstream SMILES end in a space (Amigdalin, row 0, among them): RDKit reads past
    # it, a tokenizer would not; the loader keeps the rest of the string as written
    data = load_moleculenet("esol", regression_dir)
    raw = pd.read_csv(regression_dir / "esol.csv.gz", keep_default_na=False)["smiles"]
    assert sum(s != s.strip() for s in raw) == 212
    assert data.smiles == [s.strip() for s in raw]
    assert data.smiles[0] == "OCC3OC(OCC2OC(OC(C#N)c1ccccc1)C(O)C(O)C2O)C(O)C(O)C3O"


def test_a_moleculenet_folder_as_path_finds_the_regression_folder_beside_it(
        moleculenet_dir: Path, regression_dir: Path) -> None:
    # `exlm-chem benchmark --data ../shared/data/moleculenet --tasks esol` works
    assert load_moleculenet("lipo", moleculenet_dir).path == regression_dir / "lipo.csv.gz"


def test_a_changed_file_fails_its_checksum(tmp_path: Path, regression_dir: Path) -> None:
    body = gzip.decompress((regression_dir / "freesolv.csv.gz").read_bytes())
    path = tmp_path / "freesolv.csv"
    path.write_bytes(body.replace(b"-11.01", b"-11.02", 1))
    with pytest.raises(ChecksumError):
        load_moleculenet("freesolv", path)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "lipo.csv"
    path.write_text(body)
    return path


def test_invalid_smiles_rows_are_recorded_and_labels_stay_aligned(tmp_path: Path) -> None:
    path = _write(tmp_path, "CMPD_CHEMBLID,exp,smiles\na,1.5,CCO\nb,2.5,C1CC\nc,,CCN\n"
                            "d,-3.25,\ne,4e-1,c1ccccc1\n")
    data = load_moleculenet("lipo", path, verify=False)
    assert data.smiles == ["CCO", "CCN", "c1ccccc1"]
    assert data.source_rows.tolist() == [0, 2, 4]
    np.testing.assert_array_equal(data.labels[:, 0], np.array([1.5, np.nan, 0.4], np.float32))
    assert [(r.row, r.smiles) for r in data.invalid] == [(1, "C1CC"), (3, "")]
    assert "unclosed ring" in data.invalid[0].reason and data.invalid[1].reason == "empty SMILES"


@pytest.mark.parametrize(("value", "shown"), [("high", "high"), ("inf", "inf"),
                                             ("-inf", "-inf"), ("1e39", "1e+39")])
def test_a_label_that_is_not_a_finite_number_names_its_row(tmp_path: Path, value: str,
                                                           shown: str) -> None:
    # 1e39 is finite in float64 but not in the float32 label matrix; pandas shows it parsed
    path = _write(tmp_path, f"CMPD_CHEMBLID,exp,smiles\na,1.5,CCO\nb,{value},CCN\n")
    with pytest.raises(ValueError, match=rf"data row 1 \(file line 3\), column 'exp': label "
                                         rf"'{re.escape(shown)}' is not a finite number"):
        load_moleculenet("lipo", path, verify=False)
