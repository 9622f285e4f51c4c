"""The whole-schedule fields of a schedule file, checked before its ops: version, grid, and that it does anything.

``simulator.ir.serialize.schedule_from_dict`` checks each op and buffer; these are the fields around them
that a hand-edited file got wrong and that used to be accepted: ``"version": true`` (JSON's true equals
1 in Python), a grid of negative or zero extents or none at all (``[-2,-2,-2]``, ``[]``), a grid whose
extents multiply to another world size than the file's ranks, and a file in which every rank's program
is empty (it verified, and simulated in zero seconds, as if it computed C).
"""

from __future__ import annotations

import math
from typing import Any

from simulator.errors import InputError

__all__ = ["check_version", "check_grid", "check_programs"]


def check_version(data: dict, version: int, where: str) -> None:
    """InputError unless ``data["version"]`` is the integer ``version`` (a JSON true is not 1)."""
    found = data.get("version")
    if type(found) is not int or found != version:
        raise InputError(f"{where}: schedule format version {found!r}; this tpsim reads {version}")


def check_grid(grid: Any, ranks: int, where: str) -> None:
    """InputError unless ``grid`` is a non-empty list of integers >= 1 whose product is ``ranks``, the file's
    world size (one buffer declaration per rank): [8] for 1d on 8 ranks, [2, 2, 2] for summa25d."""
    if not isinstance(grid, list) or not grid or not all(type(v) is int and v >= 1 for v in grid):
        raise InputError(f"{where}: grid {grid!r}: expected a non-empty list of integers >= 1 (the process grid, "
                         f"e.g. [{ranks}] or [q, q, d]) whose product is the file's {ranks} ranks")
    if math.prod(grid) != ranks:
        raise InputError(f"{where}: grid {grid} has {math.prod(grid)} ranks but the file declares {ranks} (one "
                         f"buffers entry per rank); the product of the grid must be the world size")


def check_programs(programs: list, where: str) -> None:
    """InputError when every rank's program is empty: such a schedule computes nothing."""
    if programs and not any(programs):
        raise InputError(f"{where}: every rank's program is empty; a schedule needs at least one op (write one "
                         f"with tpsim schedule --out)")
