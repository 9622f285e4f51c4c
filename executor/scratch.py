"""The launcher's private temporary folder: made with its owner recorded, and stale ones swept.

``make_folder`` creates ``tpsim-run-XXXXXXXX`` in the temporary directory (``tempfile.gettempdir()``,
so ``TMPDIR``) and writes ``owner`` into it: the launching process's pid and the host's name. The
launcher removes its folder when it ends; a launcher killed with SIGKILL cannot, so the next one calls
``sweep_stale``, which removes every ``tpsim-run-*`` folder that

- belongs to this user (its owner uid is ours),
- names this host in ``owner`` (a temporary directory shared across hosts or containers keeps the
  others' folders: their pids mean nothing here),
- and whose pid is no process here any more.

A folder without a readable ``owner`` (being made right now, or left by a tpsim before owners were
recorded) is kept: only what is known to be dead goes. A pid reused by another live process keeps
its folder until that process ends too, which errs on the side of keeping.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import tempfile

__all__ = ["OWNER", "PREFIX", "make_folder", "owner_of", "sweep_stale"]

log = logging.getLogger(__name__)

PREFIX = "tpsim-run-"
OWNER = "owner"
"""The file in each folder that names its launcher: ``"<pid> <hostname>\\n"``."""


def make_folder() -> str:
    """A new private folder for one job, its owner (this process, this host) recorded in it."""
    folder = tempfile.mkdtemp(prefix=PREFIX)
    with open(os.path.join(folder, OWNER), "w") as handle:
        handle.write(f"{os.getpid()} {socket.gethostname()}\n")
    return folder


def owner_of(folder: str) -> tuple[int, str] | None:
    """(pid, host) recorded in ``folder``, or None where there is no readable record."""
    try:
        with open(os.path.join(folder, OWNER)) as handle:
            pid, host = handle.read(300).split()
        return int(pid), host
    except (OSError, ValueError):  # missing, half written or not ours to read
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_stale(directory: str | None = None) -> list[str]:
    """Remove this user's ``tpsim-run-*`` folders in ``directory`` (default the temporary directory)
    whose recorded launcher on this host is dead; the folders removed."""
    directory = directory or tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(directory) if name.startswith(PREFIX)]
    except OSError:
        return []
    removed, uid, host = [], os.getuid(), socket.gethostname()
    for name in names:
        folder = os.path.join(directory, name)
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            continue
        owner = owner_of(folder)
        if owner is None or owner[1] != host or owner[0] == os.getpid() or _alive(owner[0]):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            removed.append(folder)
            log.info("removed %s, left by launcher pid %d (no longer running)", folder, owner[0])
    return removed
