"""Atomic file writes that leave files with the usual permissions.

Every file the package writes as a whole (reports, CSV / Parquet / ``.npy`` outputs,
checkpoint JSON, downloads) is filled under a temporary name beside its target and renamed
into place, so a reader never sees half a file and a failure leaves the old one. The
temporary file is created with the mode a plain ``open(path, "w")`` would give (0666
minus the umask), so published files are shared as usual, and it is named after its
writer (:mod:`exlm_chem.files.debris`) so that a later write removes what a killed run left.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "current_umask", "default_dir_mode", "default_file_mode"]


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but brief)
    os.umask(mask)
    return mask


def default_file_mode() -> int:
    """What ``open(path, "w")`` would create: 0o666 minus the umask."""
    return 0o666 & ~current_umask()


def default_dir_mode() -> int:
    """What ``os.mkdir`` would create: 0o777 minus the umask."""
    return 0o777 & ~current_umask()


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a directory entry to disk where the OS allows it (not on Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], durable: bool = False) -> Iterator[Path]:
    """A temporary file beside ``path`` to fill; renamed to ``path`` if the body succeeds.

    Parameters
    ----------
    path : path
        The target; its folder is created if missing.
    durable : bool
        fsync the file and its folder, so the new content survives a power cut
        (checkpoints want this; a report can be rewritten).

    Yields
    ------
    Path
        The temporary file (empty, mode 0666 minus the umask). Writers may reopen or
        replace it by name. On any exception it is removed and ``path`` is untouched.

    Examples
    --------
    >>> with atomic_path("out/report.md") as tmp:  # doctest: +SKIP
    ...     tmp.write_text("# report\\n")
    """
    from exlm_chem.files.debris import sweep_debris, temp_prefix

    target = Path(path).expanduser()
    sweep_debris(target)  # what a killed writer of this target left behind
    target.parent.mkdir(parents=True, exist_ok=True)
    # named after this process (exlm_chem.files.debris), so a later run can tell it is debris
    tmp = target.parent / (temp_prefix(target, "tmp") + os.urandom(4).hex())
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # umask applies
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)
