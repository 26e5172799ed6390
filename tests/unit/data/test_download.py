"""Download path of the MoleculeNet loader (through pooch), against a real HTTP server on
loopback, a server that fails, and no network at all."""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import shutil
import socket
import stat
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from exlm_chem.data import moleculenet as mn
from exlm_chem.data.download import (
    ChecksumError,
    DownloadError,
    Revision,
    digest_bytes,
    download_verified,
    match_revision,
    read_verified,
)
from exlm_chem.data.moleculenet import DATASETS, load_moleculenet
from exlm_chem.files.safe_write import default_file_mode

BBBP_SHA256 = "d07a38487aeac5cee5508413e468043ef3097451d2a112701c2d60be9ec6b662"
BBBP_MD5 = "66286cb9e6b148bd75d80c870df580fb"


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serves the directory; ``/fail/...`` answers 503 and ``/cut/...`` promises more
    bytes than it sends, then hangs up (a connection reset mid-stream)."""

    def do_GET(self):  # name fixed by the base class
        if self.path.startswith("/fail/"):
            self.send_error(503, "Service Unavailable")
        elif self.path.startswith("/cut/"):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"smiles,p_np\nCCO,1\n")
            self.wfile.flush()
            self.close_connection = True
        else:
            super().do_GET()

    def log_message(self, format, *args):  # signature fixed by the base class
        pass


@pytest.fixture
def www(tmp_path: Path):
    """A directory served over HTTP on 127.0.0.1; yields (directory, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No local copies anywhere; returns the (not yet existing) cache directory."""
    monkeypatch.delenv("EXLM_CHEM_DATA", raising=False)
    monkeypatch.setenv("EXLM_CHEM_CACHE", str(tmp_path / "cache_root"))
    monkeypatch.setattr(mn, "_REPO_ROOT", tmp_path / "no_repo")
    return tmp_path / "cache_root" / "moleculenet"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bbbp_csv(moleculenet_dir: Path) -> bytes:
    return gzip.decompress((moleculenet_dir / "bbbp.csv.gz").read_bytes())


def test_download_success_then_cached(www, isolated, moleculenet_dir: Path) -> None:
    root, base = www
    (root / "BBBP.csv").write_bytes(_bbbp_csv(moleculenet_dir))
    ds = load_moleculenet("bbbp", url=f"{base}/BBBP.csv")
    assert ds.path == isolated / "BBBP.csv"
    assert (ds.revision, len(ds.smiles), len(ds.invalid)) == ("s3", 2039, 11)
    assert os.listdir(isolated) == ["BBBP.csv"]  # no temporary file left beside it
    assert stat.S_IMODE(ds.path.stat().st_mode) == default_file_mode()  # not pooch's 0600
    assert hashlib.sha256(ds.path.read_bytes()).hexdigest() == BBBP_SHA256
    # second load: found in the cache, the (now dead) URL is never contacted
    again = load_moleculenet("bbbp", url=f"http://127.0.0.1:{_closed_port()}/BBBP.csv")
    assert again.path == ds.path and again.smiles == ds.smiles


def test_download_gz_into_explicit_cache_dir(www, isolated, moleculenet_dir, tmp_path) -> None:
    root, base = www
    shutil.copyfile(moleculenet_dir / "clintox.csv.gz", root / "clintox.csv.gz")
    cache = tmp_path / "my" / "cache"
    ds = load_moleculenet("clintox", cache_dir=cache, url=f"{base}/clintox.csv.gz")
    assert ds.path == cache / "clintox.csv.gz"
    assert ds.path.read_bytes() == (moleculenet_dir / "clintox.csv.gz").read_bytes()
    assert (ds.revision, len(ds.smiles)) == ("s3", 1480)
    assert not isolated.exists()


def test_download_checksum_mismatch_leaves_nothing(www, isolated, moleculenet_dir) -> None:
    root, base = www
    corrupted = bytearray(_bbbp_csv(moleculenet_dir))
    corrupted[-10] ^= 1
    (root / "BBBP.csv").write_bytes(bytes(corrupted))
    url = f"{base}/BBBP.csv"
    with pytest.raises(ChecksumError) as err:
        load_moleculenet("bbbp", url=url)
    msg = str(err.value)
    assert url in msg
    assert hashlib.sha256(bytes(corrupted)).hexdigest() in msg
    assert BBBP_SHA256 in msg and BBBP_MD5 in msg and "revision 's3'" in msg
    assert os.listdir(isolated) == []


def test_download_404_is_offline_error(www, isolated) -> None:
    _, base = www
    url = f"{base}/no/such/BBBP.csv"
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("BBBP", url=url)
    msg = str(err.value)
    assert "MoleculeNet dataset 'bbbp' not found" in msg
    assert "Accepted file names: bbbp.csv.gz, bbbp.csv, BBBP.csv, BBBP.csv.gz" in msg
    assert "HTTP Error 404" in msg and url in msg
    assert f"  {isolated}  (user cache" in msg
    assert f"-o {isolated / 'BBBP.csv'} {url}" in msg
    assert isinstance(err.value.__cause__, DownloadError)
    assert os.listdir(isolated) == []


def test_connection_refused_is_offline_error(isolated) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/tox21.csv.gz"
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("tox21", url=url)
    msg = str(err.value)
    assert "'tox21' not found" in msg and "Download failed" in msg and url in msg
    assert "refused" in msg.lower()
    assert os.listdir(isolated) == []


@pytest.mark.parametrize("what", ["fail", "cut"])
def test_failing_server_keeps_nothing(www, isolated, what) -> None:
    _, base = www
    url = f"{base}/{what}/BBBP.csv"
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet("bbbp", url=url)
    msg = str(err.value)
    assert "'bbbp' not found" in msg and "Download failed" in msg and url in msg
    assert ("HTTP Error 503" in msg) if what == "fail" else ("Connection broken" in msg)
    assert f"-o {isolated / 'BBBP.csv'} {url}" in msg  # where to put it by hand
    assert os.listdir(isolated) == []


@pytest.mark.parametrize("name, filename", [("bbbp", "BBBP.csv"),
                                            ("esol", "delaney-processed.csv")])
def test_no_network_names_the_file_and_where_to_put_it(isolated, monkeypatch, name,
                                                       filename) -> None:
    def no_network(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)  # every connection starts here
    spec = mn.get_spec(name)
    with pytest.raises(FileNotFoundError) as err:
        load_moleculenet(name)
    msg = str(err.value)
    assert f"MoleculeNet dataset {name!r} not found" in msg and "Download failed" in msg
    assert "no network in this test" in msg and spec.url in msg
    assert f"curl -L --create-dirs -o {isolated / filename} {spec.url}" in msg
    assert "put one of the accepted files into one of the directories above" in msg
    assert os.listdir(isolated) == []


def test_a_file_that_appeared_meanwhile_is_verified_not_fetched(tmp_path, moleculenet_dir):
    # another process finished the same download first: pooch fetches nothing, the file
    # is still checked against the known revisions
    dest = tmp_path / "clintox.csv.gz"
    shutil.copyfile(moleculenet_dir / "clintox.csv.gz", dest)
    dead = f"http://127.0.0.1:{_closed_port()}/clintox.csv.gz"
    got = download_verified(dead, dest, DATASETS["clintox"].revisions)
    assert got.path == dest and got.revision.label == "s3"
    dest.write_bytes(gzip.compress(b"smiles,FDA_APPROVED,CT_TOX\nCCO,1,0\n"))
    with pytest.raises(ChecksumError, match="does not match any known revision"):
        download_verified(dead, dest, DATASETS["clintox"].revisions)


def test_registry_url_is_the_default(isolated, monkeypatch) -> None:
    seen = []

    def fake_download(url, dest, revisions, **kwargs):
        seen.append((url, Path(dest)))
        raise DownloadError("offline in this test")

    monkeypatch.setattr(mn, "download_verified", fake_download)
    with pytest.raises(FileNotFoundError, match="offline in this test"):
        load_moleculenet("toxcast")
    assert seen == [(DATASETS["toxcast"].url, isolated / "toxcast_data.csv.gz")]


# --- the generic helpers --------------------------------------------------------------


def test_digest_is_independent_of_compression() -> None:
    plain = b"smiles,y\nCCO,1\n"
    content, d_plain = digest_bytes(plain)
    assert content == plain and not d_plain.compressed
    content, d_gz = digest_bytes(gzip.compress(plain))
    assert content == plain and d_gz.compressed
    assert d_gz.sha256_content == d_plain.sha256_content == hashlib.sha256(plain).hexdigest()
    assert d_gz.md5_file != d_plain.md5_file
    by_md5 = Revision("raw", None, d_gz.md5_file)
    by_sha = Revision("content", d_plain.sha256_content, None)
    assert match_revision(d_gz, [by_md5, by_sha]) == by_md5
    assert match_revision(d_plain, [by_md5, by_sha]) == by_sha
    assert match_revision(d_plain, [by_md5]) is None


def test_read_verified(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_bytes(b"a\n1\n")
    rev = Revision("r1", hashlib.sha256(b"a\n1\n").hexdigest(), None, "a note")
    assert read_verified(path, [rev]).revision == rev
    other = Revision("r2", "0" * 64, "f" * 32)
    with pytest.raises(ChecksumError, match=r"x\.csv does not match.*\n(.*\n)*.*'r2'"):
        read_verified(path, [other])
    unchecked = read_verified(path, [other], verify=False)
    assert unchecked.revision is None and unchecked.content == b"a\n1\n"


def test_download_verified_creates_dirs(www, tmp_path: Path) -> None:
    root, base = www
    (root / "f.txt").write_bytes(b"hello")
    rev = Revision("r", hashlib.sha256(b"hello").hexdigest(), None)
    dest = tmp_path / "a" / "b" / "f.txt"
    got = download_verified(f"{base}/f.txt", dest, [rev])
    assert got.path == dest and dest.read_bytes() == b"hello" and got.revision == rev
    assert os.listdir(dest.parent) == ["f.txt"]


def test_download_verified_unwritable_destination(www, tmp_path: Path) -> None:
    _, base = www
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(DownloadError, match="cannot write"):
        download_verified(f"{base}/f.txt", blocker / "sub" / "f.txt", [])


def test_download_timeout(tmp_path: Path) -> None:
    # A listening socket that never answers: the request must give up after `timeout`.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/slow.csv"
        with pytest.raises(DownloadError, match="timed out"):
            download_verified(url, tmp_path / "slow.csv", [], timeout=0.5)
    assert os.listdir(tmp_path) == []
