"""Checksum-verified reading and downloading of data files.

A data file is trusted only when its checksum matches a known revision. Two checksums
are accepted because the published ones come in two kinds: the sha256 of the
*decompressed* content (stable whether a file is stored as ``.csv`` or ``.csv.gz``, and
whoever gzipped it) and the md5 of the raw file bytes (what S3 and most dataset loaders
publish). Downloads go through pooch, which streams into a temporary file beside the
destination and moves it into place only after the checksum matched (checked against
every known revision in the downloader hook), so a failed or corrupted download never
leaves a file that a later run could pick up.

A file that cannot even be decompressed (truncated, corrupted gzip) is a
:class:`ChecksumError` when verifying, else a :class:`~exlm_chem.errors.DataFileError`:
never a raw gzip or zlib error, and always naming the file.

This module is generic (no dataset knowledge); pooch and requests are imported only when
a download starts.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.errors import DataFileError
from exlm_chem.files.safe_write import default_file_mode

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

DOWNLOAD_TIMEOUT_S = 60.0  # seconds without progress (connecting, or between reads)
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


class _VerifyingDownloader:
    """pooch's HTTP downloader, then this module's checksum check, before pooch moves the file.

    pooch verifies one ``known_hash`` of the raw bytes; a data file here may be any of
    several revisions, known by the sha256 of its decompressed content or the md5 of its
    raw bytes. pooch streams into a temporary file beside the destination and calls the
    downloader on it; checking there means a file that matches no revision is never moved
    into place (pooch deletes the temporary file when the downloader raises).
    """

    def __init__(self, revisions: Sequence[Revision], timeout: float, subject: str) -> None:
        import pooch

        self.http = pooch.HTTPDownloader(timeout=timeout, progressbar=False)
        self.revisions = revisions
        self.subject = subject
        self.verified: tuple[bytes, FileDigest, Revision] | None = None

    def __call__(self, url: str, output_file: str, pooch_obj: Any,
                 check_only: bool = False) -> bool | None:
        if check_only:
            return self.http(url, output_file, pooch_obj, check_only=True)
        self.http(url, output_file, pooch_obj)
        content, digest = _digest_or_raise(Path(output_file).read_bytes(), self.subject,
                                           ChecksumError)
        revision = match_revision(digest, self.revisions)
        if revision is None:
            raise ChecksumError(_mismatch_message(self.subject, digest, self.revisions))
        # pooch's temporary file is private (0600); the cache file is shared as usual
        os.chmod(output_file, default_file_mode())
        self.verified = (content, digest, revision)
        return None


class _WithoutHashAdvice(logging.Filter):
    """Drops pooch's advice to pass ``known_hash``: the downloader checked every known
    revision, so the advice would mislead (pooch's other messages pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SHA256 hash of downloaded file")


def _download_error(url: str, exc: Exception) -> DownloadError:
    """A :class:`DownloadError` saying what went wrong in words a user can act on."""
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "status_code", None) is not None:
        # requests' wording of an HTTP status ("404 Client Error: ... for url: ...")
        # repeats the URL; the status and reason are what matter
        return DownloadError(f"download of {url} failed: HTTP Error {response.status_code}: "
                             f"{response.reason}")
    return DownloadError(f"download of {url} failed: {exc}")


def download_verified(
    url: str,
    dest: str | os.PathLike[str],
    revisions: Sequence[Revision],
    *,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    what: str = "download",
) -> VerifiedFile:
    """Download ``url`` to ``dest`` with pooch, keeping it only if its checksum matches.

    pooch streams the body into a temporary file in ``dest``'s directory, which is created
    if needed; the file is moved to ``dest`` only after it matched a revision, and the
    temporary file is removed on any failure. A ``dest`` that already exists (another
    process finished the same download first) is read and verified instead.

    Raises
    ------
    DownloadError
        Network or HTTP failure, or the destination directory is not writable.
    ChecksumError
        The downloaded bytes match no known revision (nothing is kept).
    """
    import pooch
    import requests

    dest = Path(dest)
    downloader = _VerifyingDownloader(revisions, timeout,
                                      f"{what} from {url} (not saved to {dest})")
    log_filter = _WithoutHashAdvice()
    pooch_logger = pooch.get_logger()
    pooch_logger.addFilter(log_filter)
    try:
        pooch.retrieve(url, known_hash=None, fname=dest.name, path=dest.parent,
                       downloader=downloader)
    except requests.RequestException as exc:
        # HTTP status, refused connection, DNS failure, timeout, reset mid-stream
        raise _download_error(url, exc) from exc
    except OSError as exc:  # creating the directory or the temporary file, moving it
        raise DownloadError(f"cannot write to {dest.parent}: {exc}") from exc
    finally:
        pooch_logger.removeFilter(log_filter)
    if downloader.verified is None:  # pooch found dest already there and fetched nothing
        return read_verified(dest, revisions, what=what)
    content, digest, revision = downloader.verified
    return VerifiedFile(path=dest, content=content, digest=digest, revision=revision)
