"""Tests for exlm_chem.data.moleculenet on the real MoleculeNet mirror.

Expected counts were measured with RDKit 2026.09.1 (pip) and cross-checked with a plain
pandas read (default NA handling) plus ``Chem.MolFromSmiles``; another RDKit version may
accept a slightly different set of SMILES (see shared/data/moleculenet/SOURCES.md).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import logging
import os
import shutil
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from exlm_chem.data import moleculenet as mn
from exlm_chem.data.download import ChecksumError, read_verified
from exlm_chem.data.moleculenet import DATASETS, dataset_names, load_moleculenet

S3 = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/"

# name: rows in file, valid molecules, tasks, revision, NaN labels, positive labels
EXPECTED = {
    "bace": (1513, 1513, 1, "s3", 0, 691),
    "bbbp": (2050, 2039, 1, "s3", 0, 1560),
    "tox21": (7831, 7823, 12, "s3", 16012, 5858),
    "toxcast": (8615, 8597, 617, "deepchem-2016", 3770273, 126652),
    "sider": (1427, 1427, 27, "s3", 0, 21868),
    "clintox": (1484, 1480, 2, "s3", 0, 1498),
    "muv": (93127, 93127, 17, "deepchem-2016", 1333192, 489),
}
INVALID_ROWS = {
    "bace": [],
    "bbbp": [59, 61, 391, 614, 642, 645, 646, 647, 648, 649, 685],
    "tox21": [1322, 2290, 2297, 3558, 4565, 4649, 5538, 6723],
    "toxcast": [1041, 1792, 1884, 4182, 4788, 5105, 6003, 6171, 6625, 6639, 6640, 6923,
                7199, 7353, 7877, 7965, 8064, 8200],
    "sider": [],
    "clintox": [7, 302, 1219, 1220],
    "muv": [],
}  # fmt: skip


@pytest.fixture(scope="module")
def loaded(moleculenet_dataset):
    """Each dataset is parsed at most once per session (MUV takes ~20-30 s; test_splits
    reads the same ones): tests/conftest.py's ``moleculenet_dataset``."""
    return moleculenet_dataset


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """No $EXLM_CHEM_DATA, an empty fake repository, and a private cache."""
    monkeypatch.delenv("EXLM_CHEM_DATA", raising=False)
    monkeypatch.setenv("EXLM_CHEM_CACHE", str(tmp_path / "cache_root"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("")
    monkeypatch.setattr(mn, "_REPO_ROOT", repo)
    return {
        "env": tmp_path / "env",
        "repo_data": repo / "data",
        "cache": tmp_path / "cache_root" / "moleculenet",
    }


def closed_port_url(name: str) -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/{name}"


def file_rows(path: Path, column: str) -> list[str]:
    """The SMILES column read with the csv module (independent of the loader's pandas)."""
    with gzip.open(path, "rt", newline="") as fh:
        return [row[column] for row in csv.DictReader(fh)]


# --- registry -------------------------------------------------------------------------


def test_registry_names_and_fields() -> None:
    assert dataset_names() == ("bace", "bbbp", "tox21", "toxcast", "sider", "clintox", "muv")
    assert tuple(DATASETS) == dataset_names()
    for key, spec in DATASETS.items():
        assert spec.name == key
        assert spec.url == S3 + spec.filename
        assert spec.filename in spec.local_names
        assert len(set(spec.task_columns)) == spec.n_tasks == EXPECTED[key][2]
        assert spec.smiles_column not in spec.task_columns
        for rev in spec.revisions:
            assert rev.sha256_content or rev.md5_file
            assert rev.sha256_content is None or len(rev.sha256_content) == 64
            assert rev.md5_file is None or len(rev.md5_file) == 32
    assert DATASETS["bbbp"].url == S3 + "BBBP.csv"
    assert DATASETS["toxcast"].url == S3 + "toxcast_data.csv.gz"
    assert DATASETS["bace"].smiles_column == "mol"
    assert DATASETS["bace"].task_columns == ("Class",)
    assert DATASETS["clintox"].task_columns == ("FDA_APPROVED", "CT_TOX")
    assert DATASETS["toxcast"].task_columns[0] == "ACEA_T47D_80hr_Negative"
    assert DATASETS["toxcast"].task_columns[-1] == "Tanguay_ZF_120hpf_YSE_up"
    assert DATASETS["sider"].task_columns[10] == (
        "Neoplasms benign, malignant and unspecified (incl cysts and polyps)"
    )
    for name in ("toxcast", "muv"):
        revs = {r.label: r for r in DATASETS[name].revisions}
        assert set(revs) == {"s3", "deepchem-2016"}
        assert revs["s3"].sha256_content is None and revs["s3"].md5_file
    assert {r.md5_file for r in DATASETS["muv"].revisions} == {
        "9c40bd41310991efd40f4d4868fa3ddf",
        "48e9ec69793a7adb3497154a2ae756b6",
    }


@pytest.mark.parametrize("name", dataset_names())
def test_registry_columns_match_file_header(moleculenet_dir: Path, name: str) -> None:
    spec = DATASETS[name]
    header = list(pd.read_csv(moleculenet_dir / f"{name}.csv.gz", nrows=0).columns)
    assert spec.smiles_column in header
    tasks_in_file = [c for c in header if c in set(spec.task_columns)]
    assert tuple(tasks_in_file) == spec.task_columns
    if name == "toxcast":
        assert tuple(header[1:]) == spec.task_columns  # every column but smiles


@pytest.mark.parametrize("name", ["toxcast", "muv"])
def test_mirror_is_the_2016_revision(moleculenet_dir: Path, name: str) -> None:
    # Cheap check (no RDKit) so MUV's revision is tested even when slow tests are skipped.
    verified = read_verified(moleculenet_dir / f"{name}.csv.gz", DATASETS[name].revisions)
    assert verified.revision.label == "deepchem-2016"
    assert verified.digest.compressed


def test_unknown_and_case_insensitive_names(moleculenet_dir: Path) -> None:
    with pytest.raises(ValueError, match="valid names: bace, bbbp, tox21, toxcast, sider"):
        load_moleculenet("hiv", moleculenet_dir)
    assert mn.get_spec("  ClinTox ").name == "clintox"
    ds = load_moleculenet("CLINTOX", moleculenet_dir / "clintox.csv.gz")
    assert ds.name == "clintox"


# --- loading the real files -----------------------------------------------------------


@pytest.mark.parametrize(
    "name", [*dataset_names()[:-1], pytest.param("muv", marks=pytest.mark.slow)]
)
def test_counts_labels_and_row_partition(loaded, moleculenet_dir: Path, name: str) -> None:
    rows, valid, n_tasks, revision, n_nan, n_pos = EXPECTED[name]
    ds = loaded(name)
    assert ds.name == name
    assert ds.revision == revision
    assert ds.path == moleculenet_dir / f"{name}.csv.gz"
    assert ds.task_names == DATASETS[name].task_columns
    assert len(ds.smiles) == valid
    assert ds.labels.dtype == np.float32
    assert ds.labels.shape == (valid, n_tasks)
    assert int(np.isnan(ds.labels).sum()) == n_nan
    assert int((ds.labels == 1).sum()) == n_pos
    assert int((ds.labels == 0).sum()) == valid * n_tasks - n_nan - n_pos
    # every task has both classes among its labelled rows
    assert np.all(np.nanmax(ds.labels, axis=0) == 1)
    assert np.all(np.nanmin(ds.labels, axis=0) == 0)
    # kept and invalid rows partition the file's rows exactly, in order
    assert ds.source_rows.dtype == np.int64 and ds.source_rows.shape == (valid,)
    assert np.all(np.diff(ds.source_rows) > 0)
    bad = [r.row for r in ds.invalid]
    assert bad == INVALID_ROWS[name]
    assert sorted([*ds.source_rows.tolist(), *bad]) == list(range(rows))


@pytest.mark.parametrize("name", ["bbbp", "tox21", "clintox", "toxcast"])
def test_smiles_are_the_file_strings(loaded, moleculenet_dir: Path, name: str) -> None:
    ds = loaded(name)
    column = file_rows(moleculenet_dir / f"{name}.csv.gz", DATASETS[name].smiles_column)
    assert ds.smiles == [column[i] for i in ds.source_rows]
    assert all(r.smiles == column[r.row] for r in ds.invalid)


def test_invalid_reasons(loaded) -> None:
    bbbp = loaded("bbbp")
    assert bbbp.smiles[0] == "[Cl].CC(C)NCC(O)COc1cccc2ccccc12"
    assert bbbp.invalid[0] == mn.InvalidRow(
        59,
        "O=N([O-])C1=C(CN=C1NCCSCc2ncccc2)Cc3ccccc3",
        "Explicit valence for atom # 1 N, 4, is greater than permitted",
    )
    clintox = {r.row: r for r in loaded("clintox").invalid}
    assert clintox[302].reason == "Can't kekulize mol.  Unkekulized atoms: 9"
    toxcast = {r.row: r for r in loaded("toxcast").invalid}
    assert toxcast[4182].smiles == "FAIL"
    assert toxcast[4182].reason.startswith("SMILES Parse Error: syntax error while parsing: FAIL")


def test_rows_align_labels_with_file(loaded, moleculenet_dir: Path) -> None:
    ds = loaded("tox21")
    raw = pd.read_csv(moleculenet_dir / "tox21.csv.gz")  # pandas' default NA handling
    expected = raw.loc[ds.source_rows, list(ds.task_names)].to_numpy(np.float32)
    np.testing.assert_array_equal(ds.labels, expected)  # NaNs compare equal here


# --- resolution order -----------------------------------------------------------------


def _place(src: Path, directory: Path, name: str, how: str = "copy") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    dest = directory / name
    if how == "symlink":
        dest.symlink_to(src)
    elif how == "decompress":
        dest.write_bytes(gzip.decompress(src.read_bytes()))
    else:
        shutil.copyfile(src, dest)
    return dest


def test_explicit_path_beats_env(isolated, monkeypatch, moleculenet_dir: Path, tmp_path) -> None:
    src = moleculenet_dir / "clintox.csv.gz"
    _place(src, isolated["env"], "clintox.csv.gz", "symlink")
    monkeypatch.setenv("EXLM_CHEM_DATA", str(isolated["env"]))
    explicit = _place(src, tmp_path / "mine", "any_name.csv", "decompress")
    ds = load_moleculenet("clintox", explicit)
    assert ds.path == explicit
    assert ds.revision == "s3"  # matched by the sha256 of the decompressed content
    assert len(ds.smiles) == 1480


def test_env_then_repo_data_then_cache(isolated, monkeypatch, moleculenet_dir: Path) -> None:
    src = moleculenet_dir / "clintox.csv.gz"
    in_env = _place(src, isolated["env"] / "moleculenet", "clintox.csv", "decompress")
    in_repo = _place(src, isolated["repo_data"], "clintox.csv.gz", "symlink")
    in_cache = _place(src, isolated["cache"], "clintox.csv.gz")
    monkeypatch.setenv("EXLM_CHEM_DATA", str(isolated["env"]))
    offline = closed_port_url("clintox.csv.gz")

    assert load_moleculenet("clintox", url=offline).path == in_env
    monkeypatch.delenv("EXLM_CHEM_DATA")
    assert load_moleculenet("clintox", url=offline).path == in_repo
    in_repo.unlink()
    assert load_moleculenet("clintox", url=offline).path == in_cache
    # an explicit cache_dir replaces the default cache
    other = _place(src, isolated["cache"].parent / "elsewhere", "clintox.csv.gz")
    assert load_moleculenet("clintox", cache_dir=other.parent, url=offline).path == other


def test_repo_data_needs_a_source_checkout(isolated, moleculenet_dir: Path) -> None:
    _place(moleculenet_dir / "sider.csv.gz", isolated["repo_data"], "sider.csv.gz")
    assert mn._repo_data_dir() == isolated["repo_data"]
    (mn._REPO_ROOT / "pyproject.toml").unlink()  # looks like site-packages now
    assert mn._repo_data_dir() is None


def test_repo_root_is_the_folder_holding_the_package() -> None:
    # a source checkout's data/ is searched; the layout move once left this pointing at
    # exlm_chem/ itself, which silently dropped that search
    assert (mn._REPO_ROOT / "exlm_chem" / "data" / "moleculenet.py").is_file()
    assert mn._repo_data_dir() == mn._REPO_ROOT / "data"  # this test runs in a checkout


def test_accepted_names_in_env_dir(isolated, monkeypatch, moleculenet_dir: Path) -> None:
    # the S3 file name, uncompressed: matched by the S3 md5 of the raw bytes
    bbbp = _place(moleculenet_dir / "bbbp.csv.gz", isolated["env"], "BBBP.csv", "decompress")
    assert hashlib.md5(bbbp.read_bytes()).hexdigest() == "66286cb9e6b148bd75d80c870df580fb"
    monkeypatch.setenv("EXLM_CHEM_DATA", str(isolated["env"]))
    ds = load_moleculenet("bbbp", download=False)
    assert (ds.path, ds.revision, len(ds.smiles)) == (bbbp, "s3", 2039)


def test_explicit_path_missing(isolated, moleculenet_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.csv does not exist"):
        load_moleculenet("bace", tmp_path / "nope.csv")
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("bace", empty)
    msg = str(err.value)
    assert str(empty) in msg and "path= was given" in msg
    assert not isolated["cache"].exists()  # no download was tried


# --- errors ---------------------------------------------------------------------------


def test_checksum_mismatch(isolated, monkeypatch, moleculenet_dir: Path) -> None:
    text = gzip.decompress((moleculenet_dir / "clintox.csv.gz").read_bytes())
    lines = text.split(b"\n")
    assert lines[1].endswith(b",1,0")
    lines[1] = lines[1][:-4] + b",0,0"  # flip one label
    isolated["env"].mkdir()
    bad = isolated["env"] / "clintox.csv"
    bad.write_bytes(b"\n".join(lines))
    monkeypatch.setenv("EXLM_CHEM_DATA", str(isolated["env"]))

    with pytest.raises(ChecksumError) as err:
        load_moleculenet("clintox", download=False)
    assert isinstance(err.value, ValueError)
    msg = str(err.value)
    assert str(bad) in msg
    assert hashlib.sha256(bad.read_bytes()).hexdigest() in msg
    assert "9999816e760dd838358b5d88e81cea2fc062be4458ffa412ceecdba4f88a67b6" in msg
    assert "db4f2df08be8ae92814e9d6a2d015284" in msg
    assert "revision 's3'" in msg

    ds = load_moleculenet("clintox", download=False, verify=False)
    assert ds.revision == "unverified"
    assert ds.labels[0].tolist() == [0.0, 0.0]


def test_checksum_mismatch_lists_both_revisions(tmp_path: Path, moleculenet_dir: Path) -> None:
    truncated = tmp_path / "muv.csv.gz"
    truncated.write_bytes(gzip.compress(b"MUV-466,smiles\n1,C\n"))
    with pytest.raises(ChecksumError) as err:
        load_moleculenet("muv", truncated)
    msg = str(err.value)
    assert "revision 's3'" in msg and "revision 'deepchem-2016'" in msg
    assert "9c40bd41310991efd40f4d4868fa3ddf" in msg
    assert "feac9a780cb5f2e5e1c51e6ba61491a524da544ca1d6e4b542f9ad358fe0527b" in msg


def test_offline_message(isolated, monkeypatch, tmp_path: Path) -> None:
    isolated["env"].mkdir()
    isolated["repo_data"].mkdir()
    monkeypatch.setenv("EXLM_CHEM_DATA", str(isolated["env"]))
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("Tox21", download=False)
    msg = str(err.value)
    assert "MoleculeNet dataset 'tox21' not found" in msg
    assert "Accepted file names: tox21.csv.gz, tox21.csv" in msg
    for directory in (
        isolated["env"],
        isolated["env"] / "moleculenet",
        isolated["repo_data"],
        isolated["repo_data"] / "moleculenet",
        isolated["cache"],
    ):
        assert f"  {directory}  (" in msg
    assert f"{isolated['cache']}  (user cache, does not exist)" in msg
    assert S3 + "tox21.csv.gz" in msg
    assert "download=False" in msg
    order = [msg.index(f"  {d}  (") for d in (isolated["env"], isolated["repo_data"])]
    assert order == sorted(order)


def test_offline_download_failure_message(isolated) -> None:
    url = closed_port_url("BBBP.csv")
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("bbbp", url=url)
    msg = str(err.value)
    assert "'bbbp' not found" in msg and "Download failed" in msg and url in msg
    assert "bbbp.csv.gz, bbbp.csv, BBBP.csv, BBBP.csv.gz" in msg
    assert "$EXLM_CHEM_DATA is not set" in msg
    assert os.listdir(isolated["cache"]) == []  # nothing half-written


# --- parsing details (synthetic files, verification off) ------------------------------


def _synthetic(tmp_path: Path, body: str, newline: str = "\n") -> Path:
    path = tmp_path / "clintox.csv"
    path.write_bytes(body.replace("\n", newline).encode())
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_parsing_keeps_strings_and_reports_rows(tmp_path: Path, caplog, newline: str) -> None:
    body = (
        "smiles,FDA_APPROVED,CT_TOX\n"
        "NA,1,0\n"  # would become NaN with pandas' default NA handling
        ",1,0\n"
        "CCO,NA,1\n"
        "C1CC,0,0\n"
        "\n"  # a blank line is a row too: numbering must not shift
        "c1ccccc1,,0\n"
    )
    path = _synthetic(tmp_path, body, newline)
    with caplog.at_level(logging.WARNING, logger="exlm_chem.data.moleculenet"):
        ds = load_moleculenet("clintox", path, verify=False)
    assert ds.smiles == ["CCO", "c1ccccc1"]
    assert ds.source_rows.tolist() == [2, 5]
    np.testing.assert_array_equal(ds.labels, np.array([[np.nan, 1], [np.nan, 0]], np.float32))
    assert [(r.row, r.smiles) for r in ds.invalid] == [(0, "NA"), (1, ""), (3, "C1CC"), (4, "")]
    reasons = [r.reason for r in ds.invalid]
    assert reasons[0].startswith("SMILES Parse Error")
    assert reasons[1] == reasons[3] == "empty SMILES"
    assert "unclosed ring" in reasons[2]
    assert "clintox: 4 of 6 rows left out" in caplog.text


def test_bad_label_names_row_and_column(tmp_path: Path) -> None:
    path = _synthetic(tmp_path, "smiles,FDA_APPROVED,CT_TOX\nCCO,1,0\nCCN,1,yes\n")
    with pytest.raises(ValueError, match=r"data row 1 \(file line 3\), column 'CT_TOX'.*'yes'"):
        load_moleculenet("clintox", path, verify=False)
    path = _synthetic(tmp_path, "smiles,FDA_APPROVED,CT_TOX\nCCO,2,0\n")
    with pytest.raises(ValueError, match="column 'FDA_APPROVED': label '2'"):
        load_moleculenet("clintox", path, verify=False)


def test_missing_column(tmp_path: Path) -> None:
    path = _synthetic(tmp_path, "smiles,FDA_APPROVED\nCCO,1\n")
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['CT_TOX'\]"):
        load_moleculenet("clintox", path, verify=False)


def test_na_smiles_in_a_column_after_the_labels(tmp_path: Path) -> None:
    # BBBP layout (smiles last): "NA" must still reach RDKit as the string "NA"
    ds = load_moleculenet(
        "bbbp", _synthetic(tmp_path, "num,name,p_np,smiles\n1,NA,1,CC\n2,x,0,NA\n"), verify=False
    )
    assert ds.smiles == ["CC"]
    assert ds.invalid[0].smiles == "NA"
    assert ds.invalid[0].row == 1
