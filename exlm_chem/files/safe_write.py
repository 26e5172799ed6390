"""Writing files and directories so that a failure, a crash or a kill loses nothing.

* :func:`atomic_directory` / :func:`atomic_file`: the new version is assembled under a
  hidden temporary name beside the target and published in one step; the previous
  version stays whole until then.
* :func:`check_output_dir` / :func:`check_output_file` (from
  :mod:`exlm_chem.files.output_owner`): the same refusals, made before long work (training,
  embedding) starts, so that no result is lost at the end.

Saving never deletes what exlm_chem did not write: an existing directory is replaced
only when it is empty or a saved model of the expected kind holding nothing but model
files. Temporaries are named after their writer (:mod:`exlm_chem.files.debris`): a later
write to the same target removes what a killed run left, restoring a previous version
found set aside, and names whatever else it finds.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from exlm_chem.errors import OutputPathError
from exlm_chem.files.atomic_files import fsync_dir
from exlm_chem.files.debris import sweep_debris, temp_prefix
from exlm_chem.files.output_owner import check_output_dir, check_output_file, replace_refusal

__all__ = [
    "atomic_directory", "atomic_file", "check_output_dir", "check_output_file", "fsync_dir",
    "sweep_debris", "write_json_atomic",
]  # fmt: skip


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish_modes(directory: Path) -> None:
    """Give every file the mode a plain ``open`` would (safetensors writes 0600)."""
    mode = 0o666 & ~_umask()
    os.chmod(directory, 0o777 & ~_umask())  # mkdtemp makes 0700; a model is shared
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
    if not path.exists():
        os.replace(tmp, path)
        return
    if path.is_dir() and not any(path.iterdir()):
        os.replace(tmp, path)  # rename(2) replaces an empty directory atomically
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


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary name beside ``path``, renamed to ``path`` if the body succeeds.

    The file is created by the caller's writer (so it gets the usual permissions); a
    failure removes whatever was written, and the debris of killed runs is swept first.
    """
    from exlm_chem.files.atomic_files import atomic_path

    path = Path(path).expanduser()
    check_output_file(path)
    with atomic_path(path) as tmp:
        yield tmp


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented JSON to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    text = json.dumps(obj, indent=2) + "\n"  # serialise first: a TypeError leaves no debris
    with atomic_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    fsync_dir(path.parent)
