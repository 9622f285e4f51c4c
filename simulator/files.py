"""Reading and writing tpsim's own files: atomic writes, and JSON records checked for format and version.

Every file tpsim writes (schedules, traces, measured and bench records, calibrated topologies, predict's
CSV, the executor's per-rank results) goes through ``replacing``: a temporary file beside the target,
renamed over it once complete, so a reader never sees half a file and a failure leaves the old one.
Every JSON file it reads back goes through ``read_json`` (``load_record`` for the tagged records), so
a missing file, a file that is not JSON, or a record of another kind or version is one InputError line
naming the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simulator.errors import InputError

__all__ = ["replacing", "write_json_atomic", "read_json", "load_record"]


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[str]:
    """A temporary path beside ``path`` for the block to write; renamed over ``path`` when the block ends.

    Missing folders on the way to ``path`` are created (``--out runs/2d/s.json`` needs no mkdir first).
    The temporary name keeps ``path``'s suffix (``save_topology`` picks YAML or JSON by it). The file
    gets the permissions a plain ``open(path, "w")`` would give a new file, 0o666 less the umask:
    mkstemp makes its file private (0o600), and the rename would keep that. A folder or file that
    cannot be created or replaced is an InputError naming ``path``, not the temporary name; what the
    block raises passes through unchanged, and the temporary file is removed either way.

        >>> with replacing("out/s.csv") as tmp, open(tmp, "w") as handle:  # doctest: +SKIP
        ...     handle.write("a,b\\n")
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
    except OSError as error:
        blocking = next((p for p in reversed(target.parents) if p.exists() and not p.is_dir()), None)
        reason = f"{blocking} is a file, not a folder" if blocking is not None else error.strerror or error
        raise InputError(f"cannot write {path}: {reason}") from None
    os.close(fd)
    umask = os.umask(0)  # the only way to read it; set back at once
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)
        yield tmp
        try:
            os.replace(tmp, target)
        except OSError as error:  # a folder where the file should go
            raise InputError(f"cannot write {path}: {error.strerror or error}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def read_json(path: str | os.PathLike, what: str) -> Any:
    """The JSON value in the file at ``path``; InputError (one line) for a file that cannot be read or
    is not JSON. ``what`` names the kind of file: "cannot read schedule s.json: No such file or directory"."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise InputError(f"cannot read {what} {path}: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None


def load_record(path: str | os.PathLike, format: str, version: int, *, name: str, writer: str,
                file_name: str | None = None, version_name: str | None = None) -> dict:
    """The JSON object at ``path`` if its ``"format"`` is ``format`` and its ``"version"`` is ``version``;
    InputError (one line) otherwise.

    ``name`` is the record's kind in the messages ("not a bench record"), ``writer`` the command that
    writes one ("write one with tpsim bench --out"); ``file_name`` (in "cannot read ...") and
    ``version_name`` (in "... version 0; this tpsim reads version 1") default to ``name``.
    """
    record = read_json(path, file_name or name)
    if not isinstance(record, dict) or record.get("format") != format:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise InputError(f"{path}: not a {name} (format {found!r}, expected {format!r}: write one with {writer})")
    if record.get("version") != version:
        raise InputError(f"{path}: {version_name or name} version {record.get('version')!r}; this tpsim reads "
                         f"version {version} (rerun {writer})")
    return record
