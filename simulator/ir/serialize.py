"""Lossless JSON form of a Schedule, with a loader that names the first malformed field.

The file is one object: ``{"format": "tpsim-schedule", "version": 1, "algorithm": ..., "grid": [...],
"workload": {...}, "passes": ..., "dtype": ..., "groups": {name: [ranks]}, "tensors": {name: [rows,
cols]}, "buffers": [{name: {"shape": [...], "dtype": ...}} per rank], "programs": [[{"op": kind,
field: value, ...}] per rank], "inputs": [[rank, buffer, tensor, [r0, r1], [c0, c1]], ...],
"outputs": [...], "options": {...}}``. Op fields equal to their defaults are left out; loading restores them.
Loading also holds the workload, the pass and the tensors to each other (``check_workload``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from simulator.errors import InputError, ScheduleError
from simulator.files import read_json, write_json_atomic
from simulator.ir.file_header import check_grid, check_programs, check_version
from simulator.ir.checks import check_workload
from simulator.ir.ops import OP_TYPES, Op
from simulator.ir.schedule import BufferSpec, Schedule, TensorBlock
from simulator.ir.validate import validate_schedule
from simulator.limits import MAX_SCHEDULE_FILE_BYTES, check_ranks, check_shape

FORMAT = "tpsim-schedule"
VERSION = 1


def op_to_dict(op: Op) -> dict[str, Any]:
    """``{"op": kind, field: value}`` with fields at their default left out."""
    record: dict[str, Any] = {"op": op.kind}
    for f in dataclasses.fields(op):
        value = getattr(op, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.name == "params":
            record[f.name] = dict(value)
        else:
            record[f.name] = list(value) if isinstance(value, tuple) else value
    return record


def _convert(annotation: str, value: Any, where: str) -> Any:
    """Check ``value`` against an op field's annotation and return it in the dataclass's type."""
    def bad(expected: str) -> InputError:
        return InputError(f"{where}: expected {expected}, got {value!r}")

    if annotation == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if annotation == "str | None":
        if value is not None and not isinstance(value, str):
            raise bad("a string or null")
        return value
    if annotation == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("an integer")
        return value
    if annotation == "int | None":
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise bad("an integer or null")
        return value
    if annotation == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if annotation == "tuple[str, ...]":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
        return tuple(value)
    if annotation == "Region":
        if value is None:
            return None
        if (not isinstance(value, list) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise bad("null or [start, stop]")
        return (value[0], value[1])
    if annotation == "Params":
        if not isinstance(value, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            raise bad("an object of numbers")
        return tuple(value.items())
    raise AssertionError(f"op field annotation {annotation!r} has no converter")


def op_from_dict(record: Any, where: str) -> Op:
    """Rebuild an op from ``op_to_dict`` output; InputError naming ``where`` and the field when malformed."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: an op must be an object, got {record!r}")
    kind = record.get("op")
    if kind not in OP_TYPES:
        raise InputError(f"{where}: unknown op {kind!r}; valid: {', '.join(OP_TYPES)}")
    cls = OP_TYPES[kind]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(record) - set(fields) - {"op"})
    if unknown:
        raise InputError(f"{where}: {kind} has no field {unknown[0]!r}; fields: {', '.join(fields)}")
    values = {}
    for name, f in fields.items():
        if name not in record:
            if f.default is dataclasses.MISSING:
                raise InputError(f"{where}: {kind} is missing field {name!r}")
            continue
        values[name] = _convert(f.type, record[name], f"{where}: {kind}.{name}")
    try:
        return cls(**values)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    """The JSON-ready form of ``schedule``."""
    def blocks(items: list[TensorBlock]) -> list[list]:
        return [[b.rank, b.buffer, b.tensor, list(b.rows), list(b.cols)] for b in items]

    return {
        "format": FORMAT,
        "version": VERSION,
        **schedule.identity(),
        "groups": {name: list(ranks) for name, ranks in schedule.groups.items()},
        "tensors": {name: list(shape) for name, shape in schedule.tensors.items()},
        "buffers": [{name: {"shape": list(spec.shape), "dtype": spec.dtype} for name, spec in rank.items()}
                    for rank in schedule.buffers],
        "programs": [[op_to_dict(op) for op in program] for program in schedule.programs],
        **({"parts": [[[first, label] for first, label in runs] for runs in schedule.parts]} if schedule.parts else {}),
        "inputs": blocks(schedule.inputs),
        "outputs": blocks(schedule.outputs),
        "options": schedule.options,
    }


def _require(data: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise InputError(f"{where}: missing {key!r}")
    if not isinstance(data[key], kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(f"{where}: {key!r} must be {names}, got {type(data[key]).__name__}")
    return data[key]


def _int_list(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InputError(f"{where}: expected a list of integers, got {value!r}")
    return tuple(value)


def _blocks(items: Any, where: str) -> list[TensorBlock]:
    if not isinstance(items, list):
        raise InputError(f"{where}: expected a list of [rank, buffer, tensor, rows, cols]")
    out = []
    for n, item in enumerate(items):
        if (not isinstance(item, list) or len(item) != 5 or not isinstance(item[0], int)
                or not isinstance(item[1], str) or not isinstance(item[2], str)):
            raise InputError(f"{where}[{n}]: expected [rank, buffer, tensor, [r0, r1], [c0, c1]], got {item!r}")
        rows, cols = _int_list(item[3], f"{where}[{n}] rows"), _int_list(item[4], f"{where}[{n}] cols")
        if len(rows) != 2 or len(cols) != 2:
            raise InputError(f"{where}[{n}]: rows and cols must be [start, stop]")
        out.append(TensorBlock(item[0], item[1], item[2], rows, cols))
    return out


def _parts(items: Any, ranks: int, where: str) -> list[list[tuple[int, str]]]:
    """The optional per-rank layer-part runs: [[first step, label], ...] for each rank, or none."""
    if items == []:
        return []
    if not isinstance(items, list) or len(items) != ranks:
        raise InputError(f"{where}: parts must be one list of [first step, label] per rank ({ranks})")
    out = []
    for rank, runs in enumerate(items):
        ok = isinstance(runs, list) and all(
            isinstance(run, list) and len(run) == 2 and isinstance(run[0], int) and not isinstance(run[0], bool)
            and isinstance(run[1], str) for run in runs)
        if not ok or [run[0] for run in runs] != sorted(run[0] for run in runs):
            raise InputError(f"{where}: parts[{rank}] must be [[first step, label], ...] in step order")
        out.append([(run[0], run[1]) for run in runs])
    return out


def schedule_from_dict(data: Any, where: str = "schedule") -> Schedule:
    """Rebuild a Schedule from ``schedule_to_dict`` output; InputError naming the first bad field."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object")
    if data.get("format") != FORMAT:
        raise InputError(f"{where}: not a tpsim schedule (format {data.get('format')!r}, expected {FORMAT!r})")
    check_version(data, VERSION, where)  # a JSON true is not version 1
    check_ranks(len(_require(data, "buffers", list, where)), f"{where}: buffers")
    buffers = []
    for rank, declared in enumerate(data["buffers"]):
        if not isinstance(declared, dict):
            raise InputError(f"{where}: buffers[{rank}] must be an object")
        specs = {}
        for name, spec in declared.items():
            at = f"{where}: rank {rank} buffer {name!r}"
            if not isinstance(spec, dict):
                raise InputError(f"{at}: expected {{shape, dtype}}")
            shape = _int_list(spec.get("shape"), at + " shape")
            check_shape(shape, at + " shape")
            try:
                specs[name] = BufferSpec(shape, spec.get("dtype"))
            except ScheduleError as error:
                raise ScheduleError(f"{at}: {error}") from None
        buffers.append(specs)
    programs = []
    for rank, program in enumerate(_require(data, "programs", list, where)):
        if not isinstance(program, list):
            raise InputError(f"{where}: programs[{rank}] must be a list of ops")
        programs.append([op_from_dict(op, f"{where}: rank {rank} step {step}") for step, op in enumerate(program)])
    if len(programs) != len(buffers):
        raise InputError(f"{where}: {len(programs)} programs but {len(buffers)} buffer declarations")
    # A pipelined step (simulator.pipeline.lower) runs its grid on each of its pp stages.
    options = data.get("options")
    pipeline = options.get("pipeline") if isinstance(options, dict) else None
    stages = pipeline.get("pp") if isinstance(pipeline, dict) else None
    if pipeline is not None and not (type(stages) is int and stages >= 1 and len(buffers) % stages == 0):
        raise InputError(f"{where}: options.pipeline.pp {stages!r}: expected an integer >= 1 dividing the file's "
                         f"{len(buffers)} ranks (the stages the grid runs on)")
    check_grid(data.get("grid"), len(buffers) // (stages or 1), where)
    check_programs(programs, where)
    groups = {name: _int_list(ranks, f"{where}: group {name!r}")
              for name, ranks in _require(data, "groups", dict, where).items()}
    tensors = {name: _int_list(shape, f"{where}: tensor {name!r}")
               for name, shape in _require(data, "tensors", dict, where).items()}
    for name, shape in tensors.items():
        check_shape(shape, f"{where}: tensor {name!r}")
    schedule = Schedule(
        algorithm=_require(data, "algorithm", str, where),
        grid=_int_list(_require(data, "grid", list, where), f"{where}: grid"),
        workload=_require(data, "workload", dict, where),
        passes=_require(data, "passes", str, where),
        dtype=_require(data, "dtype", str, where),
        groups=groups,
        buffers=buffers,
        programs=programs,
        inputs=_blocks(data.get("inputs", []), f"{where}: inputs"),
        outputs=_blocks(data.get("outputs", []), f"{where}: outputs"),
        tensors=tensors,
        options=_require(data, "options", dict, where) if "options" in data else {},
        parts=_parts(data.get("parts", []), len(programs), where),
    )
    try:
        check_workload(schedule)
    except InputError as error:  # a ScheduleError, or a workload that Workload.from_dict refuses
        raise ScheduleError(f"{where}: {error}") from None
    return schedule


def save_schedule(schedule: Schedule, path: str | os.PathLike) -> None:
    """Write ``schedule`` to ``path`` as JSON, atomically."""
    write_json_atomic(path, schedule_to_dict(schedule))


def load_schedule(path: str | os.PathLike) -> Schedule:
    """Read and validate a schedule file; InputError (one line) for a missing, non-JSON or malformed file."""
    schedule = schedule_from_dict(read_json(path, "schedule", MAX_SCHEDULE_FILE_BYTES), str(path))
    try:
        validate_schedule(schedule)
    except ScheduleError as error:
        raise ScheduleError(f"{path}: {error}") from None
    return schedule
