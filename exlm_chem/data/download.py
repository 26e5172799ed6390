"""Checksum-verified reading and downloading of data files.

A data file is trusted only when its checksum matches a known revision. Two checksums
are accepted because the published ones come in two kinds: the sha256 of the
*decompressed* content (stable whether a file is stored as ``.csv`` or ``.csv.gz``, and
whoever gzipped it) and the md5 of the raw file bytes (what S3 and most dataset loaders
publish). Downloads are streamed into a temporary file beside the destination and moved
into place with one atomic ``os.replace`` only after the checksum matched, so a failed
or corrupted download never leaves a file that a later run could pick up.

A file that cannot even be decompressed (truncated, corrupted gzip) is a
:class:`ChecksumError` when verifying, else a :class:`~exlm_chem.errors.DataFileError`:
never a raw gzip or zlib error, and always naming the file.

This module is generic (no dataset knowledge) and stdlib-only.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from exlm_chem.errors import DataFileError
from exlm_chem.files.atomic_files import atomic_path

__all__ = [
    "DOWNLOAD_TIMEOUT_S",
    "ChecksumError",
    "DataFileError",
    "DownloadError",
    "FileDigest",
    "Revision",
    "VerifiedFile",
    "digest_bytes",
    "download_verified",
    "match_revision",
    "read_verified",
]

logger = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_S = 60.0
_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"


class Revision(NamedTuple):
    """One known published version of a data file.

    Attributes
    ----------
    label : str
        Short name reported back to the user (e.g. ``"s3"``, ``"deepchem-2016"``).
    sha256_content : str or None
        sha256 of the decompressed content; None where unknown.
    md5_file : str or None
        md5 of the raw file bytes as published (a ``.gz`` stays compressed); None
        where unknown.
    note : str
        Where this revision comes from and how it differs from the others.
    """

    label: str
    sha256_content: str | None
    md5_file: str | None
    note: str = ""


class FileDigest(NamedTuple):
    """Checksums of one file: raw bytes and decompressed content."""

    sha256_content: str
    md5_file: str
    compressed: bool


class VerifiedFile(NamedTuple):
    """A file whose checksum matched a known revision (or was not checked)."""

    path: Path
    content: bytes  # decompressed
    digest: FileDigest
    revision: Revision | None  # None only when verification was switched off


class ChecksumError(DataFileError):
    """A data file does not match any known revision (or cannot be decompressed)."""


class DownloadError(OSError):
    """A download failed (network, HTTP status, or local write); nothing was kept."""


def digest_bytes(raw: bytes) -> tuple[bytes, FileDigest]:
    """Decompress ``raw`` if it is gzip (by magic bytes, not by file name) and hash it.

    Returns
    -------
    content : bytes
        The decompressed bytes (``raw`` itself when not gzip).
    digest : FileDigest
    """
    compressed = raw[:2] == _GZIP_MAGIC
    content = gzip.decompress(raw) if compressed else raw
    return content, FileDigest(
        sha256_content=hashlib.sha256(content).hexdigest(),
        md5_file=hashlib.md5(raw, usedforsecurity=False).hexdigest(),
        compressed=compressed,
    )


def _digest_or_raise(raw: bytes, subject: str, error: type[DataFileError]
                     ) -> tuple[bytes, FileDigest]:
    """:func:`digest_bytes`, turning a broken gzip stream into ``error`` naming ``subject``."""
    try:
        return digest_bytes(raw)
    except (EOFError, OSError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise error(f"{subject} cannot be decompressed ({type(err).__name__}: {err}): it is "
                    "truncated or corrupted. Delete or replace it") from err


def match_revision(digest: FileDigest, revisions: Sequence[Revision]) -> Revision | None:
    """The first revision whose content sha256 or raw-file md5 equals the digest's."""
    for rev in revisions:
        if rev.sha256_content is not None and rev.sha256_content == digest.sha256_content:
            return rev
        if rev.md5_file is not None and rev.md5_file == digest.md5_file:
            return rev
    return None


def _mismatch_message(subject: str, digest: FileDigest, revisions: Sequence[Revision]) -> str:
    lines = [
        f"{subject} does not match any known revision.",
        f"  its sha256 (decompressed content): {digest.sha256_content}",
        f"  its md5 (raw file bytes{', gzip' if digest.compressed else ''}): {digest.md5_file}",
        "expected one of:",
    ]
    for rev in revisions:
        lines.append(
            f"  revision {rev.label!r}: sha256(content)={rev.sha256_content or 'unknown'}, "
            f"md5(file)={rev.md5_file or 'unknown'}" + (f"  [{rev.note}]" if rev.note else "")
        )
    lines.append(
        "The file is corrupted, truncated, or a different version: delete or replace it."
    )
    return "\n".join(lines)


def read_verified(
    path: str | os.PathLike[str],
    revisions: Sequence[Revision],
    *,
    verify: bool = True,
    what: str = "file",
) -> VerifiedFile:
    """Read a (possibly gzip-compressed) file and check it against known revisions.

    Parameters
    ----------
    path : path-like
        File to read; gzip is detected from its first bytes.
    revisions : sequence of Revision
        Accepted versions.
    verify : bool
        When False the checksums are computed but not enforced (``revision`` is None).
    what : str
        How to name the file in error messages (e.g. ``"MoleculeNet file for 'bbbp'"``).

    Raises
    ------
    ChecksumError
        If ``verify`` and no revision matches or the gzip stream is broken.
    DataFileError
        If not ``verify`` and the gzip stream is broken.
    """
    path = Path(path)
    error = ChecksumError if verify else DataFileError
    content, digest = _digest_or_raise(path.read_bytes(), f"{what} {path}", error)
    revision = match_revision(digest, revisions)
    if revision is None and verify:
        raise ChecksumError(_mismatch_message(f"{what} {path}", digest, revisions))
    return VerifiedFile(path=path, content=content, digest=digest, revision=revision)


def _fetch(url: str, tmp: Path, timeout: float, subject: str) -> tuple[bytes, FileDigest]:
    """Stream ``url`` into ``tmp``; its (decompressed) content and digest."""
    try:
        with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            while chunk := resp.read(_CHUNK):
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        # URLError covers HTTPError (404 ...) and refused connections; OSError covers
        # timeouts and resets mid-stream; ValueError an unusable URL.
        raise DownloadError(f"download of {url} failed: {exc}") from exc
    return _digest_or_raise(tmp.read_bytes(), subject, ChecksumError)


def download_verified(
    url: str,
    dest: str | os.PathLike[str],
    revisions: Sequence[Revision],
    *,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    what: str = "download",
) -> VerifiedFile:
    """Download ``url`` to ``dest``, keeping it only if its checksum matches.

    The body is streamed into a temporary file in ``dest``'s directory (same file
    system, so the final ``os.replace`` is atomic); the temporary file is removed on
    any failure.

    Raises
    ------
    DownloadError
        Network or HTTP failure, or the destination directory is not writable.
    ChecksumError
        The downloaded bytes match no known revision (nothing is kept).
    """
    dest = Path(dest)
    logger.info("downloading %s -> %s", url, dest)
    try:
        # the temporary file is renamed to dest on success and removed on any error
        with atomic_path(dest) as tmp:
            content, digest = _fetch(url, tmp, timeout, f"{what} from {url} (not saved to {dest})")
            revision = match_revision(digest, revisions)
            if revision is None:
                subject = f"{what} from {url} (not saved to {dest})"
                raise ChecksumError(_mismatch_message(subject, digest, revisions))
    except DownloadError:
        raise
    except OSError as exc:  # creating the temporary file or renaming it
        raise DownloadError(f"cannot write to {dest.parent}: {exc}") from exc
    return VerifiedFile(path=dest, content=content, digest=digest, revision=revision)
