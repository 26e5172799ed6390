"""Temporaries of interrupted writes: how they are named and whose they are.

A temporary beside a target ``name`` is called ``.{name}.{tag}-{host}.{pid}-{random}``
(``tag`` is ``tmp`` for a version being written, ``old`` for one set aside). The name
says which process of which host wrote it, so a later write to the same target can
remove what dead processes of this host left (a killed run) and name everything else
(:func:`exlm_chem.files.safe_write.sweep_debris` does both).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
from pathlib import Path
from typing import NamedTuple

#: Short, stable name of this host in temporary names.
HOST = hashlib.sha1(socket.gethostname().encode(), usedforsecurity=False).hexdigest()[:8]


class Leftover(NamedTuple):
    """A temporary of a dead writer of this host."""

    path: Path
    tag: str  # "tmp": a version being written; "old": the previous version set aside
    pid: int  # the writer's process


def temp_prefix(path: Path, tag: str) -> str:
    """Start of the name of a temporary of ``path`` written by this process."""
    return f".{path.name}.{tag}-{HOST}.{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def leftovers(path: Path) -> tuple[list[Leftover], list[Path]]:
    """Temporaries beside ``path``: those of dead writers of this host, and all others
    (live writers, this process, other hosts), which must be left alone."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(tmp|old)-([0-9a-f]{{8}})\.(\d+)-")
    dead: list[Leftover] = []
    kept: list[Path] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in path.parent.iterdir():
            found = pattern.match(entry.name)
            if found is None:
                continue
            tag, host, pid = found.group(1), found.group(2), int(found.group(3))
            if host != HOST or pid == os.getpid() or _pid_alive(pid):
                kept.append(entry)
            else:
                dead.append(Leftover(entry, tag, pid))
    return dead, kept


def remove_entry(entry: Path) -> None:
    """Remove a file, link or directory tree; nothing if it is already gone."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
