"""Writing files and directories so that a failure, a crash or a kill loses nothing.

The one place where the package publishes what it writes (reports, CSV / Parquet / ``.npy``
outputs, checkpoints, manifests, caches, downloads):

* :func:`atomic_path`: a file is filled under a temporary name beside its target and
  renamed into place, so a reader never sees half a file and a failure leaves the old one;
  :func:`write_text_atomic` and :func:`write_json_atomic` write text and JSON through it.
* :func:`atomic_directory`: a directory is assembled under a temporary name and swapped
  in as a whole; the previous version stays whole until then.
* :func:`sweep_debris`: what a killed writer of a target left beside it is removed, and a
  previous version it had set aside is put back.

Files get the mode a plain ``open(path, "w")`` would give (0666 minus the umask), so
published files are shared as usual. Saving never deletes what exlm_chem did not write
(:mod:`exlm_chem.files.output_owner` makes the refusals); temporaries are named after
their writer (:mod:`exlm_chem.files.debris`), so a later write to the same target can
tell a dead writer's leftovers from a live one's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from exlm_chem.errors import OutputPathError
from exlm_chem.files.debris import leftovers, remove_entry, temp_prefix
from exlm_chem.files.output_owner import check_output_dir, check_output_file, replace_refusal

logger = logging.getLogger(__name__)

__all__ = [
    "atomic_directory", "atomic_path", "current_umask", "default_dir_mode",
    "default_file_mode", "fsync_dir", "sweep_debris", "write_json_atomic", "write_text_atomic",
]  # fmt: skip


# ----------------------------------------------------------------------------- modes
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


# ----------------------------------------------------------------------------- debris
def sweep_debris(path: Path) -> list[Path]:
    """Remove temporaries of ``path`` left by dead processes; return the ones kept.

    A previous version set aside (``old``) by a killed writer is moved back first when
    ``path`` itself is missing. Temporaries of live writers and of other hosts are kept
    and named in a warning.
    """
    dead, kept = leftovers(path)
    for entry in dead:
        if entry.tag == "old" and not path.exists() and (entry.path / path.name).exists():
            os.replace(entry.path / path.name, path)
            logger.warning("restored %s from %s, left by an interrupted save", path, entry.path)
        remove_entry(entry.path)
        logger.info("removed %s, left by an interrupted write (process %d)", entry.path,
                    entry.pid)
    if kept:
        logger.warning("temporary files of other writers beside %s: %s", path,
                       ", ".join(e.name for e in kept))
    return kept


# ----------------------------------------------------------------------------- files
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
        replace it by name; it does not end in the target's suffix, so a writer that
        adds a missing suffix (``numpy.save``) must be given an open file. On any
        exception it is removed and ``path`` is untouched.

    Examples
    --------
    >>> with atomic_path("out/report.md") as tmp:  # doctest: +SKIP
    ...     tmp.write_text("# report\\n")
    """
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


def write_text_atomic(path: str | os.PathLike[str], text: str, durable: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_path`; returns the path."""
    with atomic_path(path, durable=durable) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented JSON to ``path``, durably; ``path`` must be a writable file
    name (:func:`~exlm_chem.files.output_owner.check_output_file`)."""
    text = json.dumps(obj, indent=2) + "\n"  # serialise first: a TypeError leaves no debris
    write_text_atomic(check_output_file(path), text, durable=True)


# ----------------------------------------------------------------------------- directories
def _publish_modes(directory: Path) -> None:
    """Give every file the mode a plain ``open`` would (safetensors writes 0600)."""
    mode = default_file_mode()
    os.chmod(directory, default_dir_mode())  # mkdtemp makes 0700; a model is shared
    for child in directory.iterdir():
        if child.is_file() and not child.is_symlink():
            with open(child, "rb") as fh:  # durable before it is published
                os.fsync(fh.fileno())
            if child.stat().st_mode & 0o777 != mode:
                os.chmod(child, mode)
    fsync_dir(directory)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # file system cannot
        return False
    raise OSError(code, os.strerror(code), str(b))


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str], kind: str | None = None) -> Iterator[Path]:
    """Build a directory in a temporary sibling and publish it at ``path`` on success.

    Yields the temporary directory to fill. If the body raises, it is removed and
    ``path`` is untouched. An existing ``path`` must be empty or a saved model of format
    ``kind`` (any exlm_chem kind when None) holding only model files, else
    :class:`~exlm_chem.errors.OutputPathError` is raised before the body runs. The old
    and new versions are swapped in one atomic step where the file system supports it.

    Examples
    --------
    >>> with atomic_directory("runs/step_1000") as tmp:  # doctest: +SKIP
    ...     (tmp / "state.json").write_text("{}")
    """
    path = Path(path).expanduser()
    sweep_debris(path.resolve())
    path = check_output_dir(path, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=temp_prefix(path, "tmp")))
    try:
        yield tmp
        _publish_modes(tmp)
        reason = replace_refusal(path, kind)  # the body may have taken a while
        if reason:
            raise OutputPathError(reason)
        _swap_in(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the new version on failure, else the old
    fsync_dir(path.parent)


def _swap_in(tmp: Path, path: Path) -> None:
    """Put ``tmp`` at ``path``; whatever was at ``path`` ends up at ``tmp``."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        os.replace(tmp, path)  # rename(2) replaces an empty directory atomically too
        return
    if _exchange(tmp, path):
        return
    old = Path(tempfile.mkdtemp(dir=path.parent, prefix=temp_prefix(path, "old")))
    os.replace(path, old / path.name)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.replace(old / path.name, path)  # put the previous version back
        os.rmdir(old)
        raise
    os.replace(old / path.name, tmp)  # so that the caller's cleanup removes it
    os.rmdir(old)
