"""A corrupt or truncated dataset file is one error type naming the file, never a raw one."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from exlm_chem.data.moleculenet import ChecksumError, load_moleculenet
from exlm_chem.errors import DataFileError


@pytest.fixture
def bbbp_bytes(moleculenet_dir) -> bytes:
    return (moleculenet_dir / "bbbp.csv.gz").read_bytes()


def _write(tmp_path, data: bytes, name: str = "bbbp.csv.gz"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_truncated_gzip(tmp_path, bbbp_bytes):
    path = _write(tmp_path, bbbp_bytes[: len(bbbp_bytes) // 2])
    with pytest.raises(ChecksumError, match=rf"{path} cannot be decompressed \(EOFError"):
        load_moleculenet("bbbp", path)
    with pytest.raises(DataFileError, match=rf"{path} cannot be decompressed") as err:
        load_moleculenet("bbbp", path, verify=False)
    assert type(err.value) is DataFileError  # not verifying: no checksum was involved


def test_corrupted_gzip_bytes(tmp_path, bbbp_bytes):
    corrupted = bytearray(bbbp_bytes)
    corrupted[100:140] = bytes(40)  # zeros in the middle of the deflate stream
    path = _write(tmp_path, bytes(corrupted))
    with pytest.raises(ChecksumError, match=rf"{path} cannot be decompressed"):
        load_moleculenet("bbbp", path)
    header = bytearray(bbbp_bytes)
    header[2] = 7  # an unknown compression method: BadGzipFile
    path = _write(tmp_path, bytes(header))
    with pytest.raises(ChecksumError, match=rf"{path} cannot be decompressed \(BadGzipFile"):
        load_moleculenet("bbbp", path)


def test_random_bytes_and_empty_file_without_verification(tmp_path):
    noise = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    path = _write(tmp_path, b"\x00\xff" + noise, "bbbp.csv")
    with pytest.raises(DataFileError, match=rf"bbbp: {path}, byte 1 \(file line 1\): "
                                            r"b'\\xff' is not valid utf-8; it is corrupted"):
        load_moleculenet("bbbp", path, verify=False)
    with pytest.raises(ChecksumError, match=str(path)):
        load_moleculenet("bbbp", path)
    path = _write(tmp_path, b"", "bbbp.csv")
    with pytest.raises(DataFileError, match=rf"bbbp: {path} is empty"):
        load_moleculenet("bbbp", path, verify=False)


def test_malformed_csv_without_verification(tmp_path):
    path = _write(tmp_path, gzip.compress(b'num,name,p_np,smiles\n1,"unclosed,1,CCO\n'))
    with pytest.raises(DataFileError, match=rf"bbbp: {path}: not a well-formed CSV table"):
        load_moleculenet("bbbp", path, verify=False)
    path = _write(tmp_path, gzip.compress(b"a,b\n1,2\n"))
    with pytest.raises(DataFileError, match=r"lacks the column\(s\) \['smiles', 'p_np'\]"):
        load_moleculenet("bbbp", path, verify=False)
    path = _write(tmp_path, gzip.compress(b"smiles,p_np\nCCO,maybe\n"))
    with pytest.raises(DataFileError, match=r"label 'maybe' is not 0, 1 or empty"):
        load_moleculenet("bbbp", path, verify=False)
