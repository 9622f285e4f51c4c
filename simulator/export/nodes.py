"""A Schedule as Chakra execution-trace nodes: one dependency graph per rank, as plain records.

Each op of a rank's program becomes one node (``--lower-p2p`` turns a broadcast or reduce into a
chain of send/recv nodes instead: ``simulator.export.chains``), numbered 0, 1, ... in program order:

- ``gemm``, ``local`` and ``slice`` ops become ``COMP_NODE``s carrying the compute model's duration and,
  for ASTRA-sim's roofline mode, ``num_ops`` (``Schedule.flops``) and ``tensor_size`` (bytes a gemm
  reads and writes, ``dtype x (mk + kn + mn)`` as the compute model's roofline counts them; a local op's
  memory passes, ``Schedule.memory_bytes``). An op with no arithmetic (a slice, a zero fill) carries
  ``num_ops`` 0 and ``tensor_size`` 0: ASTRA-sim's roofline divides one by the other, and skips a node
  whose ``tensor_size`` is 0 rather than dividing 0 by 0; replayed, it takes its duration.
- collectives become ``COMM_COLL_NODE``s with ``comm_type`` (Chakra's ``CollectiveCommType`` name),
  ``comm_size`` as NCCL counts it (the bytes of the rank's buffer: all_gather's output, reduce_scatter's
  input; ``Schedule.payload_bytes``) and ``pg_name``, the group's id in the communicator-group file.
- sends and receives become ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``s with ``comm_src``, ``comm_dst``,
  ``comm_size`` and a ``comm_tag`` that is the same on both sides of one message (``TagBook``).

Dependencies follow the IR. ``ctrl_deps`` is the rank's issue order: a node follows the previous
blocking op, or the communication ops a ``wait`` completed since; an asynchronous op does not hold up
the ops after it until their ``wait``, so compute overlaps it as in tpsim's simulator. ``data_deps`` is
that order plus buffer reads after writes: a node that reads a buffer depends on the node(s) that last
wrote it on this rank. Chakra's simulators resolve ``data_deps`` (Chakra's PyTorch converter moves its
control edges there for that reason), so the order goes in both. Group ids start at 1: ASTRA-sim reads
``pg_name`` "0" as "every rank".

Example: rank 0 of ``1d --gpus 2 --workload mlp --pass fwd`` (``H=X*W1``, ``Z=gelu(H)``, ``Y=Z*W2``,
``ar world Y``) becomes COMP_NODEs 0, 1, 2 (1 depends on 0, 2 on 1) and COMM_COLL_NODE 3 (ALL_REDUCE,
``pg_name`` "1", data_deps [2]: the order and the write of Y are the same node).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from simulator.export.chains import chain_nodes
from simulator.ir.ops import CommOp, Gemm, Op, Recv, Send, Wait
from simulator.ir.schedule import DTYPE_BYTES, Schedule

__all__ = ["EtNode", "TagBook", "COMM_TYPES", "group_ids", "build_graphs", "roofline_bytes"]

COMP, COLL, SEND, RECV = "COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE"

COMM_TYPES = {"all_reduce": "ALL_REDUCE", "reduce": "REDUCE", "all_gather": "ALL_GATHER",
              "reduce_scatter": "REDUCE_SCATTER", "broadcast": "BROADCAST"}
"""IR collective kind -> Chakra's ``CollectiveCommType`` name."""


@dataclass
class EtNode:
    """One Chakra node: ``type`` is a ``NodeType`` name, ``attrs`` Chakra's attribute names -> values."""

    id: int
    name: str
    type: str
    step: int
    """The IR step of the rank's program this node lowers."""
    ctrl_deps: list[int]
    data_deps: list[int]
    duration_s: float = 0.0
    attrs: dict = field(default_factory=dict)


class TagBook:
    """``comm_tag``s that pair sends with receives: one message key gets one tag on both of its ranks.

    ASTRA-sim matches a send to a receive by (source, destination, tag), so tags are counted per
    (source, destination) pair, 0, 1, ... in the order the writer first meets each message.
    """

    def __init__(self) -> None:
        self._pairs: dict[tuple[int, int], dict[tuple, int]] = {}

    def tag(self, src: int, dst: int, key: tuple) -> int:
        """The tag of message ``key`` from ``src`` to ``dst``."""
        book = self._pairs.setdefault((src, dst), {})
        return book.setdefault(key, len(book))


def group_ids(schedule: Schedule) -> dict[str, int]:
    """tpsim group name -> Chakra comm group id: 1, 2, ... in the schedule's declaration order."""
    return {name: index + 1 for index, name in enumerate(schedule.groups)}


def roofline_bytes(schedule: Schedule, rank: int, op: Op) -> int:
    """Bytes a compute op moves, as the compute model's roofline counts them (module docstring)."""
    if isinstance(op, Gemm):
        m, k, n = schedule.gemm_shape(rank, op)
        return DTYPE_BYTES[schedule.spec(rank, op.out).dtype] * (m * k + k * n + m * n)
    return schedule.memory_bytes(rank, op)


def build_graphs(schedule: Schedule, seconds: list[list[float]] | None = None, *, lower_p2p: bool = False,
                 chunks: int = 1) -> list[list[EtNode]]:
    """Every rank's nodes, rank by rank. ``seconds[rank][step]``: the duration each op's node carries
    (None: 0); ``lower_p2p``: broadcasts and reduces as chains of ``chunks`` messages per hop."""
    ids, tags = group_ids(schedule), TagBook()
    return [_RankBuilder(schedule, rank, ids, tags, seconds, lower_p2p, chunks).build()
            for rank in range(schedule.world_size)]


class _RankBuilder:
    """Walks one rank's program once, keeping what the next node must follow."""

    def __init__(self, schedule: Schedule, rank: int, ids: dict[str, int], tags: TagBook,
                 seconds: list[list[float]] | None, lower_p2p: bool, chunks: int):
        self.s, self.rank, self.ids, self.tags = schedule, rank, ids, tags
        self.seconds = seconds[rank] if seconds is not None else None
        self.lower_p2p, self.chunks = lower_p2p, chunks
        self.nodes: list[EtNode] = []
        self.frontier: list[int] = []
        """Nodes the next op follows in issue order: the last blocking op's exit nodes."""
        self.waited: list[int] = []
        """Exit nodes of asynchronous ops that a ``wait`` completed since the last node."""
        self.writer: dict[str, list[int]] = {}
        self.handles: dict[str, list[int]] = {}
        self.on_group: Counter = Counter()
        self.on_pair: Counter = Counter()

    def build(self) -> list[EtNode]:
        for step, op in enumerate(self.s.programs[self.rank]):
            if isinstance(op, Wait):
                self.waited.extend(self.handles.pop(op.handle))
                continue
            order = sorted(set(self.frontier) | set(self.waited))
            self.waited = []
            reads = sorted({node for buf in op.reads() for node in self.writer.get(buf, ())})
            exits = self._emit(step, op, order, reads) or order  # a one-rank chain emits nothing
            for buf in op.writes():
                self.writer[buf] = exits
            if isinstance(op, CommOp) and op.handle is not None:
                self.handles[op.handle] = exits
                self.frontier = order
            else:
                self.frontier = exits
        return self.nodes

    def add(self, name: str, type_: str, step: int, inner: list[int], order: list[int], reads: list[int],
            attrs: dict, duration_s: float = 0.0) -> int:
        """Append a node; one with no ``inner`` predecessor (inside its op) takes the op's order and reads."""
        ctrl = inner or order
        data = inner or sorted(set(order) | set(reads))
        node = EtNode(len(self.nodes), name, type_, step, list(ctrl), list(data), duration_s,
                      {"is_cpu_op": False, **attrs})
        self.nodes.append(node)
        return node.id

    def _duration(self, step: int) -> float:
        return self.seconds[step] if self.seconds is not None else 0.0

    def _emit(self, step: int, op: Op, order: list[int], reads: list[int]) -> list[int]:
        s, rank = self.s, self.rank
        if not isinstance(op, CommOp):
            flops = s.flops(rank, op)
            attrs = {"num_ops": flops, "tensor_size": roofline_bytes(s, rank, op) if flops else 0}
            return [self.add(op.short(), COMP, step, [], order, reads, attrs, self._duration(step))]
        size = s.payload_bytes(rank, op)
        if isinstance(op, (Send, Recv)):
            src, dst = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
            n = self.on_pair[(op.kind, src, dst)]
            self.on_pair[(op.kind, src, dst)] += 1
            attrs = {"comm_src": src, "comm_dst": dst, "comm_size": size,
                     "comm_tag": self.tags.tag(src, dst, ("p2p", n))}
            kind = SEND if isinstance(op, Send) else RECV
            return [self.add(op.short(), kind, step, [], order, reads, attrs, self._duration(step))]
        n = self.on_group[op.group]
        self.on_group[op.group] += 1
        if self.lower_p2p and op.kind in ("broadcast", "reduce"):
            return chain_nodes(self, step, op, n, size, order, reads)
        attrs = {"comm_type": COMM_TYPES[op.kind], "comm_size": size, "pg_name": str(self.ids[op.group])}
        return [self.add(op.short(), COLL, step, [], order, reads, attrs, self._duration(step))]
