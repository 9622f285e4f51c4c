"""The numbers of a measured-run record, checked before anything is simulated or compared.

A record that ``tpsim run --out`` wrote has only finite, positive times; one edited by hand, truncated
by another tool or written from a broken clock may not, and a comparison against it prints nonsense
(``+nan%``, ``-342858.4%``). ``check_measured`` refuses such a record with one InputError line naming
the file, the field (``iterations[3] time_s``, ``ops[12] duration_s``), what is valid and the value:

- ``world_size``: an integer >= 1;
- ``time_s`` and every ``iterations[i].time_s``: finite seconds > 0 (every ``rank_time_s`` entry finite
  and >= 0, a rank that took no part reads 0);
- every ``ops[i]``: an object with ``rank`` in 0..world_size-1, ``step`` >= 0, a string ``kind``,
  finite ``start_s`` and ``end_s`` and a finite ``duration_s`` >= 0;
- ``clock_origins_s``: null, or ``world_size`` finite numbers;
- every time and duration in seconds: at most ``MAX_MEASURED_S`` (about 11.6 days).

JSON's non-standard ``NaN`` and ``Infinity``, which Python's reader accepts, are refused this way too.

Example::

    >>> check_measured({"world_size": 2, "time_s": float("nan"), "iterations": [], "ops": []}, "m.json")
    Traceback (most recent call last):
    ...
    simulator.errors.InputError: m.json: time_s: expected a finite number of seconds > 0, got nan
"""

from __future__ import annotations

import math

from simulator.errors import InputError

__all__ = ["check_measured"]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


MAX_MEASURED_S = 1e6
"""The longest time a measured record may hold (about 11.6 days): no tpsim run lasts that long, and a
time of 1e308 s overflowed the comparison's bars to infinity (a matplotlib traceback under --png)."""


def _seconds(value, where: str, positive: bool) -> None:
    """``value`` must be a finite number of seconds, > 0 where ``positive``, else >= 0, and at most
    ``MAX_MEASURED_S``."""
    if not _is_number(value):
        raise InputError(f"{where}: expected a number of seconds, got {value!r}")
    if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise InputError(f"{where}: expected a finite number of seconds {'> 0' if positive else '>= 0'}, "
                         f"got {value!r}")
    if value > MAX_MEASURED_S:
        raise InputError(f"{where}: {value!r} s is longer than any measured run (at most {MAX_MEASURED_S:g} s, "
                         f"11.6 days)")


def _finite(value, where: str) -> None:
    if not (_is_number(value) and math.isfinite(value)):
        raise InputError(f"{where}: expected a finite clock reading in seconds, got {value!r}")


def check_measured(record: dict, path: str) -> None:
    """Refuse ``record`` (read from ``path``) unless its numbers are as the module doc says."""
    world = record["world_size"]
    if not (_is_index(world) and world >= 1):
        raise InputError(f"{path}: world_size: expected an integer >= 1, got {world!r}")
    _seconds(record["time_s"], f"{path}: time_s", positive=True)
    iterations = record["iterations"]
    if not isinstance(iterations, list) or not all(isinstance(i, dict) for i in iterations):
        raise InputError(f"{path}: iterations must be a list of {{time_s, ...}} objects")
    for n, iteration in enumerate(iterations):
        _seconds(iteration.get("time_s"), f"{path}: iterations[{n}] time_s", positive=True)
        ranks = iteration.get("rank_time_s", [])
        if not isinstance(ranks, list):
            raise InputError(f"{path}: iterations[{n}] rank_time_s must be a list of seconds, one per rank")
        for rank, seconds in enumerate(ranks):
            _seconds(seconds, f"{path}: iterations[{n}] rank_time_s[{rank}]", positive=False)
    ops = record["ops"]
    if not isinstance(ops, list):
        raise InputError(f"{path}: ops must be a list of per-op records")
    for n, op in enumerate(ops):
        _check_op(op, f"{path}: ops[{n}]", world)
    origins = record.get("clock_origins_s")
    if origins is not None:
        if not isinstance(origins, list) or len(origins) != world:
            raise InputError(f"{path}: clock_origins_s must be null or a list of {world} clock readings "
                             f"(one per rank)")
        for rank, origin in enumerate(origins):
            _finite(origin, f"{path}: clock_origins_s[{rank}]")


def _check_op(op, where: str, world: int) -> None:
    if not isinstance(op, dict):
        raise InputError(f"{where}: expected an object (rank, step, kind, start_s, end_s, duration_s)")
    missing = [key for key in ("rank", "step", "kind", "start_s", "duration_s") if key not in op]
    if missing:
        raise InputError(f"{where}: lacks {', '.join(missing)}")
    if not (_is_index(op["rank"]) and 0 <= op["rank"] < world):
        raise InputError(f"{where} rank: expected a rank 0..{world - 1} (world_size {world}), got {op['rank']!r}")
    if not (_is_index(op["step"]) and op["step"] >= 0):
        raise InputError(f"{where} step: expected an integer >= 0, got {op['step']!r}")
    if not isinstance(op["kind"], str):
        raise InputError(f"{where} kind: expected an op kind (gemm, all_reduce, ...), got {op['kind']!r}")
    _finite(op["start_s"], f"{where} start_s")
    if "end_s" in op:
        _finite(op["end_s"], f"{where} end_s")
    _seconds(op["duration_s"], f"{where} duration_s", positive=False)
