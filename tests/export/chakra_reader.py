"""Read exported traces back with Chakra's own reader, and the IR facts the tests hold them to.

``decode`` uses ``mlc-chakra``'s ``protolib.openFileRd`` / ``decodeMessage`` and its compiled schema,
exactly as Chakra's jsonizer and ASTRA-sim's tools read a trace, so nothing of tpsim's writer is
trusted; ``attrs`` also returns the protobuf field each attribute was stored in.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.ops import CommOp, Wait
from simulator.workloads.workload import Workload

et_def_pb2 = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")
protolib = pytest.importorskip("chakra.src.third_party.utils.protolib")

CASES = {
    "1d": (["--algo", "1d", "--gpus", "4", "--workload", "mlp", "--m", "256", "--hidden", "256"],
           ("1d", Workload.mlp(256, 256), None, 4)),
    "2d": (["--algo", "2d", "--grid", "2,2,1", "--workload", "gemm", "--m", "2048", "--k", "2048", "--n", "2048"],
           ("2d", Workload.gemm(2048, 2048, 2048), (2, 2, 1), None)),
    "summa25d": (["--algo", "summa25d", "--grid", "2,2,2", "--workload", "gemm", "--m", "512", "--k", "256",
                  "--n", "256"], ("summa25d", Workload.gemm(512, 256, 256), (2, 2, 2), None)),
    "cannon25d": (["--algo", "cannon25d", "--grid", "2,2,2", "--workload", "gemm", "--m", "256", "--k", "256",
                   "--n", "256"], ("cannon25d", Workload.gemm(256, 256, 256), (2, 2, 2), None)),
}
"""Name -> (the CLI's schedule arguments, the same schedule's build_schedule arguments)."""


def schedule_of(case: str):
    """The IR schedule the CLI arguments of ``case`` describe (bfloat16, fwd+bwd and, for 1d / 1d-sp,
    Megatron-LM's asynchronous dX communication: the CLI's defaults)."""
    algo, workload, grid, gpus = CASES[case][1]
    overlap = {"async_dgrad": True} if algo in ("1d", "1d-sp") else {}
    return build_schedule(algo, workload, "both", "bfloat16", grid=grid, gpus=gpus, **overlap)


def decode(path: Path) -> tuple[object, list]:
    """(GlobalMetadata, [Node, ...]) of one .et file, read with Chakra's protolib."""
    handle = protolib.openFileRd(str(path))
    try:
        metadata = et_def_pb2.GlobalMetadata()
        assert protolib.decodeMessage(handle, metadata), f"{path}: no GlobalMetadata"
        nodes = []
        while True:
            node = et_def_pb2.Node()
            if not protolib.decodeMessage(handle, node):
                return metadata, nodes
            nodes.append(node)
    finally:
        handle.close()


def decode_all(directory: Path, world: int, prefix: str = "tpsim") -> list[list]:
    """Every rank's nodes."""
    return [decode(directory / f"{prefix}.{rank}.et")[1] for rank in range(world)]


def attrs(node) -> dict[str, tuple[str, object]]:
    """Attribute name -> (the protobuf field holding it, its value)."""
    out = {}
    for attr in node.attr:
        field = attr.WhichOneof("value")
        out[attr.name] = (field, getattr(attr, field))
    return out


def value(node, name: str):
    """One attribute's value."""
    return attrs(node)[name][1]


def type_name(node) -> str:
    """The node's NodeType name."""
    return et_def_pb2.NodeType.Name(node.type)


def comm_groups(directory: Path) -> dict[str, list[int]]:
    """The communicator-group file."""
    return json.loads((directory / "comm_group.json").read_text())


def issued_ops(schedule, rank: int) -> list[tuple[int, object]]:
    """(step, op) of every op but waits, the ops that become nodes."""
    return [(step, op) for step, op in enumerate(schedule.programs[rank]) if not isinstance(op, Wait)]


def ancestors(nodes) -> list[set[int]]:
    """Each node's every predecessor through data_deps (ids are topological: checked by the tests)."""
    before: list[set[int]] = []
    for node in nodes:
        seen = set()
        for dep in node.data_deps:
            seen.add(dep)
            seen |= before[dep]
        before.append(seen)
    return before


def is_comm(op) -> bool:
    return isinstance(op, CommOp)



def replay_finishes(graphs, groups: dict[str, list[int]]) -> bool:
    """Whether every rank's nodes can all complete when a send and its receive must both be ready to run
    (a rendezvous, the strictest pairing) and a collective needs every member of its group (``groups``,
    the comm-group file): a trace that passes cannot hang a simulator that honours its dependencies."""
    done = [set() for _ in graphs]
    coll_index = []  # per rank: node id -> (pg_name, n-th collective of this rank on it)
    for nodes in graphs:
        seen, index = Counter(), {}
        for node in nodes:
            if type_name(node) == "COMM_COLL_NODE":
                pg = value(node, "pg_name")
                index[node.id] = (pg, seen[pg])
                seen[pg] += 1
        coll_index.append(index)
    while not all(len(d) == len(nodes) for d, nodes in zip(done, graphs)):
        progress = False
        posted: dict[tuple, list[tuple[int, int]]] = {}
        for rank, nodes in enumerate(graphs):
            for node in nodes:
                if node.id in done[rank] or not all(d in done[rank] for d in node.data_deps):
                    continue
                kind = type_name(node)
                if kind == "COMP_NODE":
                    done[rank].add(node.id)
                    progress = True
                elif kind == "COMM_COLL_NODE":
                    posted.setdefault(coll_index[rank][node.id], []).append((rank, node.id))
                else:
                    key = (value(node, "comm_src"), value(node, "comm_dst"), value(node, "comm_tag"))
                    posted.setdefault(key, []).append((rank, node.id))
        for key, sides in posted.items():
            if len(sides) == (len(groups[key[0]]) if isinstance(key[0], str) else 2):
                for rank, node_id in sides:
                    done[rank].add(node_id)
                progress = True
        if not progress:
            return False
    return True
