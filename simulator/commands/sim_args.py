"""Arguments `tpsim simulate` and `tpsim predict` share: topology, placement, collective overrides."""

from __future__ import annotations

import argparse
import os

from simulator.collectives import ALGORITHMS
from simulator.errors import InputError
from topologies import gpu_nodes, load_topology
from topologies.placement import PLACEMENTS, placement_indices

__all__ = ["add_topology_arguments", "parse_overrides", "check_placement", "load_graph", "format_time",
           "format_bytes"]


def add_topology_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--topology``, ``--calibration``, ``--placement`` and ``--algo-override``."""
    group = parser.add_argument_group("machine")
    group.add_argument("--topology", required=True, metavar="NAME|FILE",
                       help="a preset (dgx-a100, dgx-h100:128, a100-4gpu:16, loopback:8, ...), a cluster "
                            "(server=dgx-h100,servers=16,nics=4,nic_Gbps=200) or a .yaml/.json/.graphml file")
    group.add_argument("--calibration", metavar="FILE",
                       help="a calibration profile (tpsim calibrate --profile, or the topology file it "
                            "wrote) applied to the topology: fitted link rates and latencies carry to any "
                            "topology of the same node kind")
    group.add_argument("--placement", metavar="P",
                       help="rank -> GPU: linear (default), depth-major, column-major, or a file of GPU indices")
    group.add_argument("--algo-override", action="append", default=[], metavar="KIND=ALGO",
                       help="force a collective algorithm, e.g. all_reduce=ring (repeatable; send=p2p for "
                            "send/recv)")


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["all_reduce=ring"]`` -> ``{"all_reduce": "ring"}``; InputError naming valid kinds and algorithms,
    or two algorithms for one kind (the same pair twice is fine)."""
    overrides: dict[str, str] = {}
    for item in items:
        kind, sep, algorithm = item.partition("=")
        if not sep or not kind or not algorithm:
            raise InputError(f"--algo-override {item!r}: expected KIND=ALGO, e.g. all_reduce=ring")
        if kind not in ALGORITHMS:
            raise InputError(f"--algo-override {item!r}: unknown collective kind {kind!r}; valid: "
                             f"{', '.join(ALGORITHMS)}")
        if algorithm not in ALGORITHMS[kind]:
            raise InputError(f"--algo-override {item!r}: {kind} has no algorithm {algorithm!r}; valid: "
                             f"{', '.join(ALGORITHMS[kind])}")
        if overrides.get(kind, algorithm) != algorithm:
            raise InputError(f"--algo-override {item!r} conflicts with {kind}={overrides[kind]} given before; "
                             f"give {kind} one algorithm, one of {', '.join(ALGORITHMS[kind])}")
        overrides[kind] = algorithm
    return overrides


def check_placement(spec: str | None, G, world_size: int | None, *, all_ok: bool = False) -> None:
    """Refuse a ``--placement`` that no arrangement can use, before any work: a name that is none of
    ``PLACEMENTS`` (nor ``all`` where ``all_ok``) and no file, or (once ``world_size`` is known, not None)
    a file that cannot be read, lists another number of GPUs than ``world_size``, names one twice or one
    the topology lacks. Whether a named placement fits an arrangement's grid is the arrangement's
    business (predict skips those that do not)."""
    if spec is None or spec in PLACEMENTS or (all_ok and spec == "all"):
        return
    if not (os.path.isfile(spec) or spec.endswith((".json", ".txt"))):
        names = ", ".join([*PLACEMENTS, *(["all"] if all_ok else [])])
        raise InputError(f'--placement {spec}: unknown placement "{spec}"; valid: {names}, or a file of GPU '
                         f"indices, one per rank")
    if world_size is not None:
        placement_indices(spec, len(gpu_nodes(G)), world_size)


def load_graph(spec: str, calibration: str | None = None):
    """The topology graph for ``--topology`` with ``--calibration`` applied (errors are TopologyError, one line)."""
    return load_topology(spec, calibration)


def format_time(seconds: float) -> str:
    """A time with a unit a person reads at a glance: "812.4 us", "14.287 ms", "2.103 s"."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def format_bytes(nbytes: float) -> str:
    """Bytes in decimal units: "512 B", "3.2 MB", "1.07 GB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"
