"""What this machine and tpsim accept before any work starts: the limits, and the checks that refuse more.

Every entry point runs these checks where it parses an argument or opens a file, so that a size
that cannot be done is one ``InputError`` line (exit status 2) before a graph, a schedule or an array
is built, instead of minutes of work, gigabytes of memory and a traceback.

================================  ==============  ===============================================================
limit                             value           why
================================  ==============  ===============================================================
``MAX_RANKS``                     65,536          ranks of one schedule (``--gpus``, ``--grid``, a schedule file,
                                                  ``collective --ranks``). 4x the largest run measured: simulating
                                                  16,384 GPUs took 670 s and over 5 GB (issue 14), building a 1d
                                                  schedule on 65,536 ranks 46 s and 0.5 GB here; 10^6 ranks would
                                                  need hundreds of GB
``MAX_LOCAL_RANKS``               512             ranks ``tpsim run`` and ``tpsim bench`` fork on this host: each
                                                  keeps a gloo connection to every other, and 511 of them stay
                                                  under the usual limit of 1,024 open files per process; 64 ranks
                                                  start in 1.6 s (``executor.launch``)
``MAX_TOPOLOGY_GPUS``             131,072         GPUs of one topology (``dgx-h100:N``, ``torus-3d:XxYxZ``, a file).
                                                  The largest clusters built hold about 100k GPUs; the graph of
                                                  16,384 DGX H100 (131,072 GPUs) builds in 11 s and 0.6 GB here
``MAX_EXTENT``                    2^31 - 1        any one tensor extent (``--m``, ``--hidden``, a buffer's rows):
                                                  cuBLAS takes gemm sizes as 32-bit ints
``MAX_ELEMENTS``                  2^48            elements of any one tensor (and the attention scores b*a*s*s):
                                                  512 TiB in bfloat16, far over any model's largest activation
                                                  (GPT-3's [b*s, 4h] is about 2^37), and flat indices (seeded values,
                                                  dropout masks, int64) stay exact with 2^15 to spare
``MAX_FLOPS``                     2^63 - 1        a workload's forward and backward FLOPs: they fit int64
``MAX_BYTES``                     2^50            any byte size on the command line (1 PiB): over a thousand
                                                  GPUs' memory, and exact in a float64
``SEED_LIMIT``                    2^32            ``--seed`` is in [0, 2^32): the seeded values and the dropout
                                                  masks use its low 32 bits, so 2^32 would repeat seed 0
``MAX_SCHEDULE_FILE_BYTES``       1 GiB           a schedule file: a summa25d transformer block on 1,024 ranks
                                                  is 49 MB; parsing costs about 8x the file in memory
``MAX_FILE_BYTES``                256 MiB         any other file tpsim reads (topology, measured or bench record,
                                                  nccl-tests log, placement): a topology of 8,192 GPUs is 6 MB
``MAX_JSON_DEPTH``                64              nesting of a JSON or YAML file; tpsim's own files nest at most 6
                                                  deep (a measured record)
================================  ==============  ===============================================================

Tolerances and time limits must be finite and > 0. Memory: a command that knows what it will
allocate (``verify``, ``run``) compares it with ``available_memory_bytes`` (``/proc/meminfo``
MemAvailable, or less under a cgroup limit) and refuses up front, since a lazily granted allocation
would meet the out-of-memory killer instead of a ``MemoryError``.

Example::

    >>> check_ranks(1_000_000, "--gpus 1000000")
    Traceback (most recent call last):
    ...
    simulator.errors.InputError: --gpus 1000000: 1,000,000 ranks is more than tpsim simulates (at most 65,536 ranks)
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from simulator.errors import InputError

__all__ = ["MAX_RANKS", "MAX_LOCAL_RANKS", "MAX_TOPOLOGY_GPUS", "MAX_EXTENT", "MAX_ELEMENTS", "MAX_FLOPS",
           "MAX_BYTES", "SEED_LIMIT", "MAX_SCHEDULE_FILE_BYTES", "MAX_FILE_BYTES", "MAX_JSON_DEPTH",
           "check_ranks", "check_local_ranks", "check_topology_gpus", "check_extent", "check_shape",
           "check_workload_sizes", "check_bytes", "check_seed", "check_tolerance", "check_timeout",
           "check_file_size", "binary_size", "loads_json", "check_json_depth", "available_memory_bytes",
           "check_memory"]

MAX_RANKS = 65_536
"""Most ranks in one schedule (module doc: measured costs)."""
MAX_LOCAL_RANKS = 512
"""Most ranks forked on this host by one job."""
MAX_TOPOLOGY_GPUS = 131_072
"""Most GPUs in one topology graph."""
MAX_EXTENT = 2**31 - 1
"""Largest extent of any tensor dimension (cuBLAS's int)."""
MAX_ELEMENTS = 2**48
"""Most elements in any one tensor."""
MAX_FLOPS = 2**63 - 1
"""Most FLOPs of one workload, forward and backward (int64)."""
MAX_BYTES = 2**50
"""Largest byte size given on the command line (1 PiB)."""
SEED_LIMIT = 2**32
"""Seeds are in [0, SEED_LIMIT)."""
MAX_SCHEDULE_FILE_BYTES = 1 << 30
"""Largest schedule file read."""
MAX_FILE_BYTES = 256 << 20
"""Largest file of any other kind read."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of lists and objects in a JSON or YAML file."""


def _power(value: int) -> str:
    """``2^48`` for a power of two (or one less), else the number with separators."""
    for exponent in range(1, 64):
        if value == 2**exponent:
            return f"2^{exponent}"
        if value == 2**exponent - 1:
            return f"2^{exponent} - 1"
    return f"{value:,}"


def check_ranks(ranks: int, what: str) -> None:
    """InputError when ``ranks`` (one schedule's world size) is over ``MAX_RANKS``; ``what`` names its source."""
    if ranks > MAX_RANKS:
        raise InputError(f"{what}: {ranks:,} ranks is more than tpsim simulates (at most {MAX_RANKS:,} ranks)")


def check_local_ranks(nproc: int, flag: str = "--nproc") -> None:
    """InputError for fewer than one or more local ranks than ``MAX_LOCAL_RANKS`` (checked before any rank
    is forked, and before torch is imported)."""
    if nproc < 1:
        raise InputError(f"{flag} {nproc}: give at least 1 local rank ({flag} N, N >= 1)")
    if nproc > MAX_LOCAL_RANKS:
        raise InputError(f"{flag} {nproc}: at most {MAX_LOCAL_RANKS} ranks run on one host (each keeps a gloo "
                         f"connection to every other); run more under torchrun on several hosts")


TOPOLOGY_WATCHERS: list = []
"""Callables ``watch(gpus, what)`` that ``check_topology_gpus`` calls, once the size passed, before the graph
is built: ``simulator.guard.watch_topologies`` estimates the graph's cost there and may refuse it."""


def check_topology_gpus(gpus: int, what: str, error: type[InputError] = InputError) -> None:
    """``error`` (an InputError, by default) when a topology of ``gpus`` GPUs is over ``MAX_TOPOLOGY_GPUS``;
    run it before building it (the topologies package passes its ``TopologyError``). Then each of
    ``TOPOLOGY_WATCHERS`` is told the size."""
    if gpus > MAX_TOPOLOGY_GPUS:
        raise error(f"{what}: {gpus:,} GPUs is more than a tpsim topology holds (at most {MAX_TOPOLOGY_GPUS:,} GPUs)")
    for watch in tuple(TOPOLOGY_WATCHERS):
        watch(gpus, what)


def check_extent(value: int, what: str) -> None:
    """InputError when a tensor extent is over ``MAX_EXTENT`` (sizes < 1 are the workload's own check)."""
    if value > MAX_EXTENT:
        raise InputError(f"{what}: {value:,} is over the largest tensor extent, {MAX_EXTENT:,} "
                         f"({_power(MAX_EXTENT)})")


def check_shape(shape: tuple[int, ...], what: str) -> None:
    """InputError for a tensor shape with an extent over ``MAX_EXTENT`` or more than ``MAX_ELEMENTS`` elements."""
    for extent in shape:
        check_extent(extent, f"{what} {list(shape)}")
    elements = math.prod(shape)
    if elements > MAX_ELEMENTS:
        raise InputError(f"{what} {list(shape)}: {elements:,} elements is over the most one tensor may hold, "
                         f"{MAX_ELEMENTS:,} ({_power(MAX_ELEMENTS)})")


def check_workload_sizes(workload) -> None:
    """InputError for a Workload whose extents, tensors or FLOPs are over the limits (``Workload`` runs it)."""
    label = workload.label()
    sizes = {name: value for name, value in workload.to_dict().items()
             if name not in ("name", "dropout") and isinstance(value, int) and not isinstance(value, bool)}
    if workload.name == "transformer":
        sizes["tokens batch*seq"] = workload.m
    for name, value in sizes.items():
        check_extent(value, f"{label}: {name}")
    for name, shape in workload.shapes().items():
        check_shape(shape, f"{label}: tensor {name}")
    flops = sum(6 * workload.m * linear.k * linear.n for linear in workload.linears())
    if workload.name == "transformer":
        scores = workload.batch * workload.heads * workload.seq * workload.seq
        if scores > MAX_ELEMENTS:
            raise InputError(f"{label}: the attention scores (b*a*s*s) are {scores:,} elements, over the most "
                             f"one tensor may hold, {MAX_ELEMENTS:,} ({_power(MAX_ELEMENTS)})")
        flops += 12 * workload.batch * workload.seq * workload.seq * workload.hidden
    if flops > MAX_FLOPS:
        raise InputError(f"{label}: {flops:,} FLOPs (forward and backward) is over {MAX_FLOPS:,} "
                         f"({_power(MAX_FLOPS)}, int64)")


def check_bytes(nbytes: int, what: str) -> None:
    """InputError for a byte size over ``MAX_BYTES``."""
    if nbytes > MAX_BYTES:
        raise InputError(f"{what}: {nbytes:,} bytes is over the largest size tpsim takes, {MAX_BYTES:,} "
                         f"({_power(MAX_BYTES)}, 1 PiB)")


def check_seed(seed: int, flag: str = "--seed") -> None:
    """InputError for a seed outside [0, 2^32) (the seeded values use its low 32 bits only)."""
    if not 0 <= seed < SEED_LIMIT:
        raise InputError(f"{flag} {seed}: a seed is an integer from 0 to {SEED_LIMIT - 1:,} (2^32 - 1)")


def check_tolerance(value: float, flag: str = "--tolerance") -> None:
    """InputError for a tolerance that is not a finite number > 0 (nan, inf, 0 and negatives)."""
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{flag} {value}: a tolerance is a finite number > 0, e.g. 1e-5")


def binary_size(nbytes: int) -> str:
    """``1 GiB``, ``256 MiB``, ``3.2 GiB``, ``131,072.6 GiB``: a size in the largest binary unit it reaches."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):,.{0 if nbytes % (1 << shift) == 0 else 1}f} {unit}"
    return f"{nbytes} bytes"


def check_timeout(seconds: float, flag: str = "--timeout") -> None:
    """InputError for a time limit that is not a finite number of seconds > 0."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"{flag} {seconds}: a time limit is a finite number of seconds > 0, e.g. 300")


def check_file_size(path: str | os.PathLike, size: int | None, limit: int, what: str) -> None:
    """InputError for a ``what`` file at ``path`` of ``size`` bytes over ``limit`` (``size`` None: a file
    that is not a regular one and gave more than ``limit`` bytes when read)."""
    if size is None or size > limit:
        found = f"is {binary_size(size)}" if size is not None else f"gives more than {binary_size(limit)}"
        kind = what if what.endswith("file") else f"{what} file"
        raise InputError(f"{what} {path} {found}; tpsim reads at most {binary_size(limit)} from a {kind}")


def _nested(where: str | None) -> InputError:
    prefix = f"{where}: " if where else ""
    return InputError(f"{prefix}nested deeper than {MAX_JSON_DEPTH} levels of lists and objects")


def check_json_depth(value: Any, where: str | None) -> None:
    """InputError when ``value`` (parsed JSON or YAML) nests lists and mappings deeper than ``MAX_JSON_DEPTH``.

    Iterative, so a deep value cannot exhaust the stack here (a later ``repr`` or walk would), and a
    container that YAML aliases share is walked again only when reached deeper, so an alias bomb
    costs at most ``MAX_JSON_DEPTH`` walks of each container."""
    deepest: dict[int, int] = {}
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise _nested(where)
        if deepest.get(id(item), 0) >= depth:
            continue
        deepest[id(item)] = depth
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


_INT_DIGITS = 30
"""Most digits of an integer in a JSON file: more than any int64 needs (19), far under the 4,300 past
which Python's int() raises a ValueError."""


def _json_int(digits: str, where: str | None) -> int:
    if len(digits.lstrip("-")) > _INT_DIGITS:
        prefix = f"{where}: " if where else ""
        raise InputError(f"{prefix}an integer of {len(digits.lstrip('-')):,} digits; tpsim reads integers of at "
                         f"most {_INT_DIGITS} digits")
    return int(digits)


def loads_json(text: str, where: str | None) -> Any:
    """``json.loads(text)``, with nesting deeper than ``MAX_JSON_DEPTH`` an InputError naming ``where`` (if any).

    ``json.JSONDecodeError`` passes through for the caller to word; the C decoder's RecursionError
    (at about a thousand levels) becomes the same one line as the depth check, and an integer of
    thousands of digits (a ValueError in ``int``) an InputError too."""
    try:
        value = json.loads(text, parse_int=lambda digits: _json_int(digits, where))
    except RecursionError:
        raise _nested(where) from None
    if isinstance(value, (dict, list)):
        check_json_depth(value, where)
    return value


def _cgroup_free_bytes() -> int | None:
    """What a cgroup memory limit leaves (v2 memory.max, or v1), None where none is set or readable."""
    for limit_path, usage_path in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_path) as handle:
                limit = handle.read().strip()
            with open(usage_path) as handle:
                usage = int(handle.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:  # "max", or v1's "no limit" near 2^63
            return max(0, int(limit) - usage)
    return None


def available_memory_bytes() -> int | None:
    """Memory a new allocation can have now: MemAvailable, or what a cgroup limit leaves if that is less.

    Falls back to the physical memory where /proc/meminfo is missing; None where nothing says."""
    available = None
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):  # not a POSIX system that reports it
            return None
    cgroup = _cgroup_free_bytes()
    return available if cgroup is None else min(available, cgroup)


def check_memory(needed: int, what: str, hint: str, detail: str = "", available: int | None = None) -> None:
    """InputError when ``needed`` bytes are more than ``available`` (default ``available_memory_bytes()``).

    The line names both: "WHAT needs at least 12.0 GiB DETAIL, more than the 3.1 GiB of memory available
    here; HINT" (``binary_size``)."""
    available = available_memory_bytes() if available is None else available
    if available is not None and needed > available:
        raise InputError(f"{what} needs at least {binary_size(needed)}{detail}, more than the "
                         f"{binary_size(available)} of memory available here; {hint}")
