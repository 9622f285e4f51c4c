"""Each command's output files, checked before the command does any work: writable, distinct, not an input.

``check_command_files(args)`` runs in ``simulator.cli.main`` between parsing and the command itself, so
that a command that cannot deliver its outputs says so in one line before it computes anything
(``predict --csv ok.csv --png /missing/x.png`` used to write the CSV and then fail; ``run --out
/unwritable`` ran the whole job and then lost the measurement). For every output it checks that

* it is a regular file or nothing (``simulator.output_paths.check_replaceable``: not ``/dev/null``, a
  FIFO, a socket or a folder), after following symbolic links;
* its folder can take a new file: a temporary file is created there and removed again (or, where
  the folder does not exist yet, a temporary folder in the nearest existing one), which is the
  only test that holds for root and for read-only mounts alike;
* it is not another output of the same command (``predict --csv X --png X``) nor one of its inputs
  (``compare m.json --trace m.json``, ``run --schedule s.json --out s.json``, ``calibrate
  --from-nccl-tests x.yaml -o x.yaml``): the same file after resolving links, hard links included;
* an image (``--png``) has a suffix matplotlib can write (``--png out.xyz`` was a traceback).

``OUTPUTS`` and ``INPUTS`` say which arguments of which command are files written and read; a command
that gains an output option adds it to ``OUTPUTS`` (tests/test_bad_input_outputs.py fails for an option
whose help says it writes, draws or saves a file and that is not listed).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from simulator.errors import InputError
from simulator.output_paths import check_replaceable, real_target, temporary_prefix

__all__ = ["OUTPUTS", "INPUTS", "IMAGE_OUTPUTS", "command_key", "check_command_files", "check_output_location",
           "image_formats"]

OUTPUTS: dict[str, dict[str, str]] = {
    "schedule": {"out": "--out"},
    "simulate": {"trace": "--trace"},
    "predict": {"csv": "--csv", "png": "--png", "trace": "--trace"},
    "topology show": {"png": "--png"},
    "topology save": {"out": "OUT"},
    "run": {"out": "--out", "json": "--out", "trace": "--trace"},  # --json FILE: the old spelling of --out
    "bench": {"out": "--out", "json": "--out"},
    "calibrate": {"output": "-o", "profile": "--profile"},
    "compare": {"png": "--png", "trace": "--trace"},
    "sweep": {"out": "--out"},
}
"""Per command (``command_key``): argument dest -> the option as the user spells it, for every file written."""

INPUTS: dict[str, str] = {
    "schedule": "--schedule", "topology": "--topology", "calibration": "--calibration", "placement": "--placement",
    "measured": "MEASURED", "from_bench": "--from-bench", "from_nccl_tests": "--from-nccl-tests",
    "compare": "--compare", "spec": "SPEC", "model": "--model",
}
"""Argument dest -> option, for every argument that may name a file a command reads (a preset name or a
placement keyword is not a file and is skipped)."""

IMAGE_OUTPUTS = frozenset({"png"})
"""Output dests drawn by matplotlib, whose suffix picks the image format."""


def command_key(args: argparse.Namespace) -> str:
    """"run", "topology save", ...: the key of ``OUTPUTS`` for the parsed ``args``."""
    action = getattr(args, "action", None)
    return f"{args.command} {action}" if args.command == "topology" and action else str(args.command)


def image_formats() -> list[str]:
    """The file suffixes (without the dot) matplotlib's savefig writes, e.g. png, svg, pdf."""
    from matplotlib.backend_bases import FigureCanvasBase  # only for a --png: matplotlib is slow to import

    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_command_files(args: argparse.Namespace, key: str | None = None) -> None:
    """InputError (one line) for the first output of ``args``'s command (``key``, by default
    ``command_key(args)``) that cannot be written as given."""
    key = key or command_key(args)
    outputs = [(label, value, dest) for dest, label in OUTPUTS.get(key, {}).items()
               if isinstance(value := getattr(args, dest, None), str)]
    for label, path, dest in outputs:
        if path == "":
            if dest == "json":  # the command's own message says what --json takes now
                continue
            raise InputError(f"{label} '': give a file name, e.g. {label} out.json")
        check_output_location(label, path)
        if dest in IMAGE_OUTPUTS:
            _check_image_format(label, path)
    seen: list[tuple[str, str, Path]] = []
    for label, path, _ in outputs:
        target = real_target(path)
        for other_label, other_path, other_target in seen:
            if _same_file(target, other_target):
                both = path if path == other_path else f"{other_path}, {path}"
                raise InputError(f"{other_label} and {label} name the same file ({both}); give each output its "
                                 f"own file")
        seen.append((label, path, target))
    for input_label, input_path in _inputs(args):
        for label, path, target in seen:
            if os.path.exists(input_path) and _same_file(real_target(input_path), target):
                named = "" if input_path == path else f" {input_path}"
                raise InputError(f"{label} {path} is also the {input_label} input{named}, which this command "
                                 f"reads: writing it would replace it; give the output another name")


def check_output_location(label: str, path: str) -> None:
    """InputError unless a file can be written at ``path``: a regular file or nothing there, and a folder
    (existing, or one that can be made) that takes a new file. Leaves nothing behind."""
    target = real_target(path)
    check_replaceable(path, target, label)
    base = target.parent
    while not base.exists():
        base = base.parent
    given = Path(path)  # the path as typed names the blocking file as the user knows it; then the resolved one
    blocking = next((p for p in [*given.parents, target.parent, *target.parent.parents]
                     if str(p) != "." and p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise InputError(f"{label} {path}: cannot write it, {blocking} is a file, not a folder")
    try:
        if base == target.parent:
            fd, probe = tempfile.mkstemp(prefix=temporary_prefix(target), suffix=target.suffix, dir=base)
            os.close(fd)
            os.unlink(probe)
        else:  # the writer will make the missing folders: one can be made here
            os.rmdir(tempfile.mkdtemp(prefix=".tpsim-probe.", dir=base))
    except OSError as error:
        raise InputError(f"{label} {path}: cannot write in {base} ({error.strerror or error})") from None


def _check_image_format(label: str, path: str) -> None:
    suffix = Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return  # matplotlib writes PNG (its savefig.format) when the name has no suffix
    formats = image_formats()
    if suffix not in formats:
        raise InputError(f"{label} {path}: unknown image format '.{suffix}'; give a name ending in "
                         f"{', '.join('.' + f for f in formats)}")


def _inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) for every argument of ``args`` that may name an input file, lists flattened."""
    found = []
    for dest, label in INPUTS.items():
        value = getattr(args, dest, None)
        if dest == "topology" and getattr(args, "command", None) == "topology":
            label = "topology"  # the positional NAME|FILE
        values = value if isinstance(value, list) else [value]
        found += [(label, v) for v in values if isinstance(v, str) and v]
    return found


def _same_file(a: Path, b: Path) -> bool:
    """Whether the resolved paths ``a`` and ``b`` are one file (one path, or hard links to one inode)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False
