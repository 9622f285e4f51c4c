"""Reading and writing tpsim's own files: atomic writes, and JSON records checked for format and version.

Every file tpsim writes (schedules, traces, measured and bench records, topologies and calibration
profiles, predict's CSV, every PNG, the executor's per-rank results) goes through ``replacing``: a
temporary file beside the target, renamed over it once complete, so a reader never sees half a file and
a failure or a kill leaves the old one (``simulator.output_paths`` says which targets may be replaced and
sweeps what a kill leaves; ``simulator.command_files`` checks a command's outputs before it starts).
Every file it reads goes through ``read_bytes`` (text through ``read_text``, JSON through
``read_json``, tagged records through ``load_record``), so a missing file, one larger than
``simulator.limits`` allows (at most the limit and one byte are read from a device or a pipe), a
binary one (``/dev/zero``), one that is not UTF-8 or not JSON, JSON nested too deep, or a record of
another kind or version is one InputError line naming the file.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from simulator.errors import InputError
from simulator.limits import MAX_FILE_BYTES, check_file_size, loads_json
from simulator.output_paths import check_replaceable, lock_temporary, real_target, sweep_stale, temporary_prefix

__all__ = ["replacing", "write_json_atomic", "write_text_atomic", "save_figure", "read_bytes", "read_text",
           "read_json", "load_record"]


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[str]:
    """A temporary path beside ``path`` for the block to write; renamed over ``path`` when the block ends.

    Missing folders on the way to ``path`` are created (``--out runs/2d/s.json`` needs no mkdir first).
    The temporary name keeps ``path``'s suffix (``save_topology`` picks YAML or JSON by it, matplotlib
    the image format). The file gets the permissions a plain ``open(path, "w")`` would give a new file,
    0o666 less the umask: mkstemp makes its file private (0o600), and the rename would keep that.

    The rules of ``simulator.output_paths`` hold: a symbolic link is followed (the file it names is
    replaced, the link stays); a target that is a device, FIFO, socket or folder is an InputError before
    anything is written; the temporary is locked while it is written, and temporaries of the same target
    that a killed write left are swept first. A folder or file that cannot be created or replaced is an
    InputError naming ``path``, not the temporary name; what the block raises passes through unchanged,
    and the temporary file is removed either way.

        >>> with replacing("out/s.csv") as tmp, open(tmp, "w") as handle:  # doctest: +SKIP
        ...     handle.write("a,b\\n")
    """
    target = real_target(path)
    check_replaceable(path, target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target)
        fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(target), suffix=target.suffix, dir=target.parent)
    except OSError as error:
        blocking = next((p for p in reversed(target.parents) if p.exists() and not p.is_dir()), None)
        reason = f"{blocking} is a file, not a folder" if blocking is not None else error.strerror or error
        raise InputError(f"cannot write {path}: {reason}") from None
    try:
        lock_temporary(fd)
        umask = os.umask(0)  # the only way to read it; set back at once
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        yield tmp
        check_replaceable(path, target)  # a FIFO made meanwhile is not replaced either
        try:
            os.replace(tmp, target)
        except OSError as error:  # a folder where the file should go
            raise InputError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)  # after the rename: the lock stays until the temporary has its final name


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as compact JSON and a newline to ``path`` through ``replacing``: never half-written.

    A write that fails (a full disk) is an InputError naming ``path``, like the folder errors.
    """
    with replacing(path) as tmp:
        try:
            with open(tmp, "w") as handle:
                json.dump(data, handle, separators=(",", ":"))
                handle.write("\n")
        except OSError as error:
            raise InputError(f"cannot write {path}: {error.strerror or error}") from None


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through ``replacing``; a failed write is an InputError naming ``path``."""
    with replacing(path) as tmp:
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            raise InputError(f"cannot write {path}: {error.strerror or error}") from None


def save_figure(figure: Any, path: str | os.PathLike) -> None:
    """Save the matplotlib ``figure`` to ``path`` through ``replacing`` (its suffix picks the format)."""
    with replacing(path) as tmp:
        figure.savefig(tmp)


_CHUNK_BYTES = 1 << 20
"""``read_bytes`` reads this much at a time, so a binary file is refused at its first chunk."""


def read_bytes(path: str | os.PathLike, what: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the ``what`` file at ``path``; InputError (one line) for one that cannot be read, is
    larger than ``limit`` bytes or holds a NUL byte (no text file tpsim reads does).

    A regular file's size is checked before reading; anything else (``/dev/zero``, a pipe) is read up
    to ``limit`` + 1 bytes and refused past ``limit``. Reading goes by chunks and stops at the first NUL
    byte, so ``/dev/zero`` or ``/dev/urandom`` costs one chunk. Opened without blocking, so a FIFO
    nobody writes reads as empty instead of hanging."""
    data = bytearray()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            info = os.fstat(fd)
            regular = stat.S_ISREG(info.st_mode)
            if regular:
                check_file_size(path, info.st_size, limit, what)
            while len(data) <= limit:
                chunk = handle.read(min(_CHUNK_BYTES, limit + 1 - len(data)))
                if not chunk:
                    break
                nul = chunk.find(0)
                if nul >= 0:
                    raise InputError(f"{what} {path}: not a text file (a NUL byte at offset {len(data) + nul:,})")
                data += chunk
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        check_file_size(path, len(data) if regular else None, limit, what)
    return bytes(data)


def read_text(path: str | os.PathLike, what: str, limit: int = MAX_FILE_BYTES, errors: str = "strict") -> str:
    """The text of the ``what`` file at ``path`` (``read_bytes`` decoded as UTF-8); InputError (one line)
    for what ``read_bytes`` refuses and, with ``errors="strict"``, for bytes that are not UTF-8."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise InputError(f"{what} {path}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
                         f"{error.start:,})") from None


def read_json(path: str | os.PathLike, what: str, limit: int = MAX_FILE_BYTES) -> Any:
    """The JSON value in the file at ``path``; InputError (one line) for a file that cannot be read (see
    ``read_text``), is not JSON or nests deeper than ``simulator.limits.MAX_JSON_DEPTH``. ``what``
    names the kind of file: "cannot read schedule s.json: No such file or directory"."""
    text = read_text(path, what, limit)
    try:
        return loads_json(text, str(path))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None


def load_record(path: str | os.PathLike, format: str, version: int, *, name: str, writer: str,
                file_name: str | None = None, version_name: str | None = None,
                limit: int = MAX_FILE_BYTES) -> dict:
    """The JSON object at ``path`` if its ``"format"`` is ``format`` and its ``"version"`` is ``version``;
    InputError (one line) otherwise.

    ``name`` is the record's kind in the messages ("not a bench record"), ``writer`` the command that
    writes one ("write one with tpsim bench --out"); ``file_name`` (in "cannot read ...") and
    ``version_name`` (in "... version 0; this tpsim reads version 1") default to ``name``; ``limit`` is
    the most bytes read (``read_text``).
    """
    record = read_json(path, file_name or name, limit)
    if not isinstance(record, dict) or record.get("format") != format:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise InputError(f"{path}: not a {name} (format {found!r}, expected {format!r}: write one with {writer})")
    if type(record.get("version")) is not int or record.get("version") != version:  # a JSON true is not 1
        raise InputError(f"{path}: {version_name or name} version {record.get('version')!r}; this tpsim reads "
                         f"version {version} (rerun {writer})")
    return record
