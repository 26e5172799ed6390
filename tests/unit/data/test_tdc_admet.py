"""The TDC ADMET group loader: the 22 tasks from the shared copy, its checksum, and the
download path (served from 127.0.0.1, as every download test here)."""

from __future__ import annotations

import functools
import hashlib
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from exlm_chem.data import moleculenet as mn
from exlm_chem.data import tdc_admet
from exlm_chem.data.download import ChecksumError


@pytest.fixture(scope="module")
def admet_zip(moleculenet_dir: Path) -> Path:
    path = moleculenet_dir.parent / "tdc_admet" / "admet_group.zip"
    assert path.is_file(), f"TDC ADMET group not found at {path}"
    return path


def test_every_task_loads_with_the_published_sizes_and_its_metric(admet_zip) -> None:
    from exlm_chem.benchmark.report_tdc import leaderboard

    board = leaderboard()["tasks"]
    assert list(tdc_admet.TDC_ADMET_TASKS) == list(board)  # one table, TDC's 22 names
    for name, spec in tdc_admet.TDC_ADMET_TASKS.items():
        task = tdc_admet.load_tdc_admet(name, path=admet_zip)
        assert len(task.train_val.smiles) == board[name]["n_train_val"], name
        assert len(task.test.smiles) == board[name]["n_test"], name
        assert board[name]["metric"] == {"mae": "MAE", "spearman": "Spearman",
                                         "roc_auc": "AUROC", "prc_auc": "AUPRC"}[spec.metric]
        assert np.isfinite(task.train_val.y).all() and np.isfinite(task.test.y).all()
        if spec.task_type == "classification":
            assert set(np.unique(task.test.y)) == {0.0, 1.0}, name
    assert task.revision == "dataverse-4426004"
    assert task.sha256 == hashlib.sha256(admet_zip.read_bytes()).hexdigest()


def test_the_search_order_finds_the_copy_beside_the_moleculenet_folder(admet_zip) -> None:
    # $EXLM_CHEM_DATA names .../moleculenet in CI; the group sits in ../tdc_admet
    assert tdc_admet.find_admet_group(download=False).resolve() == admet_zip.resolve()


def test_an_unknown_task_lists_the_22(admet_zip) -> None:
    with pytest.raises(ValueError, match="caco2_wang, hia_hou"):
        tdc_admet.load_tdc_admet("caco2", path=admet_zip)


def test_a_changed_file_is_refused_naming_it(admet_zip, tmp_path) -> None:
    bad = tmp_path / "admet_group.zip"
    raw = bytearray(admet_zip.read_bytes())
    raw[1000] ^= 0xFF
    bad.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match=str(bad)):
        tdc_admet.load_tdc_admet("dili", path=bad)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # signature fixed by the base class
        pass


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A folder served on 127.0.0.1 as TDC's URL, and no local copy anywhere."""
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(tdc_admet, "ADMET_GROUP_URL",
                        f"http://127.0.0.1:{server.server_address[1]}/4426004")
    monkeypatch.delenv("EXLM_CHEM_DATA", raising=False)
    monkeypatch.setenv("EXLM_CHEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(mn, "_REPO_ROOT", tmp_path / "no_repo")
    try:
        yield root, tmp_path / "cache" / "tdc_admet" / "admet_group.zip"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_download_is_kept_only_when_its_md5_is_tdcs(served, admet_zip) -> None:
    root, cached = served
    (root / "4426004").write_bytes(b"PK\x03\x04 not the group")
    with pytest.raises(ChecksumError):
        tdc_admet.load_tdc_admet("dili")
    assert not cached.exists()
    shutil.copy(admet_zip, root / "4426004")
    task = tdc_admet.load_tdc_admet("dili")
    assert cached.is_file() and len(task.test.smiles) == 96


def test_offline_the_error_names_every_place_searched(served) -> None:
    _root, cached = served  # nothing served: a 404
    with pytest.raises(FileNotFoundError) as error:
        tdc_admet.load_tdc_admet("dili")
    message = str(error.value)
    assert str(cached) in message and "download failed" in message
    assert "e3e4dda2f7f62268448fc813ceefccd5" in message
