"""Temporaries of interrupted writes: how they are named, found and cleaned.

A temporary beside a target ``name`` is called ``.{name}.{tag}-{host}.{pid}-{random}``
(``tag`` is ``tmp`` for a version being written, ``old`` for one set aside). The name
says which process of which host wrote it, so a later write to the same target can
remove what dead processes of this host left (a killed run) and name everything else.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import socket
from pathlib import Path

logger = logging.getLogger(__name__)

#: Short, stable name of this host in temporary names.
HOST = hashlib.sha1(socket.gethostname().encode(), usedforsecurity=False).hexdigest()[:8]


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


def sweep_debris(path: Path) -> list[Path]:
    """Remove temporaries of ``path`` left by dead processes; return the ones kept.

    A previous version set aside (``old``) by a killed writer is moved back first when
    ``path`` itself is missing.
    """
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(tmp|old)-([0-9a-f]{{8}})\.(\d+)-")
    kept = []
    with contextlib.suppress(FileNotFoundError):
        for entry in path.parent.iterdir():
            found = pattern.match(entry.name)
            if found is None:
                continue
            tag, host, pid = found.group(1), found.group(2), int(found.group(3))
            if host != HOST or pid == os.getpid() or _pid_alive(pid):
                kept.append(entry)
                continue
            if tag == "old" and not path.exists() and (entry / path.name).exists():
                os.replace(entry / path.name, path)
                logger.warning("restored %s from %s, left by an interrupted save", path, entry)
            _remove(entry)
            logger.info("removed %s, left by an interrupted write (process %d)", entry, pid)
    if kept:
        logger.warning("temporary files of other writers beside %s: %s", path,
                       ", ".join(e.name for e in kept))
    return kept


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
