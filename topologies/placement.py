"""Placement: which GPU each schedule rank runs on.

Grid ranks follow the project's convention: in a ``[q, q, d]`` grid, rank ``r = k*q*q + j*q + i`` (row j, column i,
depth k). Named placements give the GPU index of rank r:

- ``linear`` (default): GPU r. Row groups (the q ranks that differ in i) sit on consecutive GPUs.
- ``depth-major``: GPU ``(j*q + i)*d + k``. The d ranks of a depth group sit on consecutive GPUs, so on
  d-GPU (or d-dividing) servers the depth all-reduce of SUMMA2.5 never leaves a server.
- ``column-major``: GPU ``k*q*q + i*q + j``. Column groups sit on consecutive GPUs.

Worked example, grid [2, 2, 2] (8 ranks): rank 5 is (k=1, j=0, i=1); ``linear`` puts it on GPU 5,
``depth-major`` on GPU (0*2 + 1)*2 + 1 = 3 (its depth group {1, 5} on GPUs 2, 3), ``column-major`` on
GPU 4 + 2 + 0 = 6.

Any other spec is a file holding a permutation: a JSON list of GPU indices, one per rank
(``[3, 0, 1, 2]``), or plain text with the indices separated by spaces, commas or newlines
(``#`` starts a comment). Fewer ranks than GPUs is fine; the list then names the GPUs used. Error
messages count entries from 1, as topology files do ("entry 2" is the second index in the file); ranks
and GPUs keep their 0-based numbers.

Example::

    >>> from topologies.builders import nvswitch_node
    >>> resolve_placement("depth-major", nvswitch_node(8), 8, (2, 2, 2))
    ['gpu0', 'gpu2', 'gpu4', 'gpu6', 'gpu1', 'gpu3', 'gpu5', 'gpu7']
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable

import networkx as nx

from simulator.errors import InputError
from simulator.files import read_text
from simulator.limits import loads_json
from topologies.errors import PlacementDoesNotFit, TopologyError
from topologies.validate import gpu_nodes

__all__ = ["resolve_placement", "PLACEMENTS", "placement_indices"]


def _grid(name: str, world_size: int, grid) -> tuple[int, int]:
    if grid is None:
        raise PlacementDoesNotFit(f"placement {name} needs a grid [q,q,d]")
    if len(grid) != 3 or grid[0] != grid[1]:
        raise PlacementDoesNotFit(
            f"placement {name} needs a grid [q,q,d] with equal first two factors, got {list(grid)}"
        )
    q, _, d = grid
    if q * q * d != world_size:
        raise PlacementDoesNotFit(
            f"placement {name}: grid [{q},{q},{d}] has q*q*d = {q * q * d} ranks, world size is {world_size}"
        )
    return q, d


def _linear(world_size: int, grid) -> list[int]:
    return list(range(world_size))


def _depth_major(world_size: int, grid) -> list[int]:
    q, d = _grid("depth-major", world_size, grid)
    return [(j * q + i) * d + k for k in range(d) for j in range(q) for i in range(q)]


def _column_major(world_size: int, grid) -> list[int]:
    q, d = _grid("column-major", world_size, grid)
    return [k * q * q + i * q + j for k in range(d) for j in range(q) for i in range(q)]


PLACEMENTS: dict[str, Callable[[int, tuple | None], list[int]]] = {
    "linear": _linear,
    "depth-major": _depth_major,
    "column-major": _column_major,
}


def _read_file(path: str) -> list[int]:
    try:
        text = read_text(path, "placement file")  # within simulator.limits: one line naming the file
    except InputError as error:
        raise TopologyError(str(error)) from None
    if text.lstrip().startswith("["):
        try:
            values = loads_json(text, f"placement file {path}")
        except json.JSONDecodeError as error:
            raise TopologyError(f"placement file {path}: bad JSON at line {error.lineno}: {error.msg}") from None
    else:
        values = [token for token in re.split(r"[\s,]+", re.sub(r"#[^\n]*", "", text)) if token]
    indices = []
    for position, value in enumerate(values, start=1):  # counted from 1, like a topology file's "link 3"
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,30}", value):  # longer: refused below, not int()'ed
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TopologyError(f"placement file {path}: entry {position} must be a GPU index, got {value!r}")
        indices.append(value)
    return indices


def placement_indices(spec: str | None, n_gpus: int, world_size: int, grid=None) -> list[int]:
    """Rank -> GPU index for ``spec`` on a topology with ``n_gpus`` GPUs, checked (see resolve_placement)."""
    if not (isinstance(world_size, int) and world_size >= 1):
        raise TopologyError(f"placement: world size must be a positive integer, got {world_size!r}")
    if world_size > n_gpus:
        raise PlacementDoesNotFit(
            f"placement: world size {world_size} needs {world_size} GPUs, the topology has {n_gpus}"
        )
    name = spec or "linear"
    if name in PLACEMENTS:
        indices, origin = PLACEMENTS[name](world_size, grid), name
    elif os.path.isfile(name) or name.endswith((".json", ".txt")):
        indices, origin = _read_file(name), f"placement file {name}"
        if len(indices) != world_size:
            raise PlacementDoesNotFit(f"{origin} lists {len(indices)} GPUs for world size {world_size}")
    else:
        raise TopologyError(f'unknown placement "{name}", known: {", ".join(PLACEMENTS)}, or a file of GPU indices')
    owner: dict[int, int] = {}
    for rank, index in enumerate(indices):
        if not 0 <= index < n_gpus:
            raise TopologyError(f"{origin}: rank {rank} -> GPU {index} is out of range 0..{n_gpus - 1}")
        if index in owner:
            raise TopologyError(f"{origin}: GPU {index} is given to ranks {owner[index]} and {rank}")
        owner[index] = rank
    return indices


def resolve_placement(spec: str | None, G: nx.DiGraph, world_size: int, grid=None) -> list[str]:
    """Rank -> GPU node name; ``spec`` is None/"linear", another name in PLACEMENTS, or a file path.

    Raises PlacementDoesNotFit (a TopologyError) for too few GPUs, a wrong count in a file or a grid
    that does not match the world size, and TopologyError for duplicates, out-of-range indices or an
    unknown name.
    """
    gpus = gpu_nodes(G)
    return [gpus[index] for index in placement_indices(spec, len(gpus), world_size, grid)]
