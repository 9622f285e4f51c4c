"""Where an output really goes, whether tpsim may replace it, and the temporaries a killed write left behind.

tpsim writes every output as a temporary file beside the target, named ``.NAME.XXXXXXXX.SUFFIX`` (what
``tempfile.mkstemp`` makes from the prefix ``.NAME.`` and NAME's suffix), and renames it over the target
(``simulator.files.replacing``). This module holds the three rules around that rename:

* ``real_target``: a symbolic link is followed, so ``--out link.json`` rewrites the file the link names
  and the link stays a link (renaming over the link itself would replace it with a plain file);
* ``check_replaceable``: only a regular file (or nothing) may be replaced. A rename over ``/dev/null``,
  a FIFO, a socket or a folder would destroy it (as root, ``--out /dev/null`` used to replace the device
  node with a JSON file), so each is one InputError line;
* ``sweep_stale``: a writer locks its temporary (an exclusive ``flock``) right after ``mkstemp`` makes it,
  then gives it its final permissions, and holds the lock until the rename; the kernel drops the lock
  when the writer dies. So a temporary of the same target that nobody holds was left by a killed write
  and is removed before the next write of that target. The one exception is a temporary still at
  ``mkstemp``'s private mode 0o600 and younger than ``STALE_AFTER_S``: its writer may be between
  ``mkstemp`` and the lock. A live writer of any age holds its lock and is left alone.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
from pathlib import Path

from simulator.errors import InputError

__all__ = ["STALE_AFTER_S", "real_target", "check_replaceable", "kind_of", "temporary_prefix", "is_temporary_of",
           "lock_temporary", "sweep_stale"]

STALE_AFTER_S = 5.0
"""An unlocked temporary still at mkstemp's mode 0o600 is stale once this many seconds old (module docstring)."""

_MKSTEMP_MODE = 0o600
"""The mode ``tempfile.mkstemp`` creates a file with; a writer changes it only once it holds the lock."""

_MKSTEMP_LETTERS = "[a-z0-9_]{8}"
"""The random part ``tempfile.mkstemp`` puts between prefix and suffix (CPython's _RandomNameSequence)."""

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def real_target(path: str | os.PathLike) -> Path:
    """The file a write of ``path`` replaces: ``path`` with every symbolic link on the way resolved.

    A dangling link gives the missing file it names (the write creates it); a loop of links is an
    InputError."""
    try:
        return Path(os.path.realpath(path, strict=False))
    except OSError as error:  # ELOOP on Python versions whose realpath raises it
        raise InputError(f"cannot write {path}: {error.strerror or error}") from None


def kind_of(mode: int) -> str | None:
    """"a folder", "a character device", ... for what ``mode`` (``st_mode``) describes; None for a regular file."""
    return next((name for test, name in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def check_replaceable(path: str | os.PathLike, target: Path, what: str = "") -> None:
    """InputError unless ``target`` (``real_target(path)``) is missing or a regular file.

    ``what`` names the option in the message ("--out /dev/null: ..."); without it the message starts
    "cannot write PATH"."""
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # the folder checks name a file on the way
        return
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(f"{what + ' ' if what else 'cannot write '}{path}: a loop of symbolic links") from None
        raise InputError(f"cannot write {path}: {error.strerror or error}") from None
    kind = kind_of(mode)
    if kind is None:
        return
    shown = f"{path} (a link to {target})" if str(target) != os.path.abspath(path) else str(path)
    hint = "give a file name inside it" if kind == "a folder" else "give the path of a regular file"
    head = f"{what} {shown}" if what else f"cannot write {shown}"
    raise InputError(f"{head}: it is {kind}, and tpsim writes only regular files (it replaces the whole "
                     f"file); {hint}")


def temporary_prefix(target: Path) -> str:
    """The prefix of ``target``'s temporaries: ``.NAME.``."""
    return f".{target.name}."


def is_temporary_of(name: str, target: Path) -> bool:
    """Whether the file name ``name`` is one of ``target``'s temporaries (``.NAME.XXXXXXXX.SUFFIX``)."""
    pattern = re.escape(temporary_prefix(target)) + _MKSTEMP_LETTERS + re.escape(target.suffix)
    return re.fullmatch(pattern, name) is not None


def lock_temporary(fd: int) -> None:
    """Mark the temporary open on ``fd`` as being written (held until ``fd`` is closed or its process dies)."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def sweep_stale(target: Path, now: float | None = None) -> list[Path]:
    """Remove ``target``'s temporaries that no live writer holds (module docstring); the paths removed.

    Errors (a folder that cannot be listed, a file gone meanwhile) leave things be: the sweep is
    tidying, never a reason for a write to fail."""
    now = time.time() if now is None else now
    removed = []
    try:
        names = [entry.name for entry in os.scandir(target.parent) if entry.name.startswith(temporary_prefix(target))]
    except OSError:
        return removed
    for name in names:
        if not is_temporary_of(name, target):
            continue
        path = target.parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            if stat.S_IMODE(info.st_mode) == _MKSTEMP_MODE and now - info.st_mtime < STALE_AFTER_S:
                continue  # perhaps not locked yet (a umask of 0o066 also gives 0o600: those wait too)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a live writer holds it
                continue
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
