"""The Schedule IR: what every rank holds and does, as plain data that tpsim's three consumers share.

A Schedule records

- the algorithm, grid and workload it came from (metadata);
- declared process groups: name -> ordered global ranks (group-local rank g is ``groups[name][g]``);
- declared buffers per rank: name -> ``BufferSpec(shape, dtype)``;
- one ordered op list per rank (``simulator.ir.ops``);
- where the global tensors' blocks live: ``inputs`` (scattered in before the run) and ``outputs``
  (gathered after it), as ``TensorBlock`` records;
- optionally, which layer part (``qkv``, ``attn``, ``fc1``, ...) each run of ops lowers, for traces
  and time per part.

The interpreter (numpy), the simulator (simpy) and the executor (torch.distributed) all read this one
object. ``simulator.ir.serialize`` saves and loads it as JSON; ``simulator.ir.validate`` dry-runs it.

Example, a 1-rank schedule computing C = A B::

    Schedule(algorithm="1d", grid=(1,), workload={"name": "gemm", "m": 2, "k": 3, "n": 4},
             passes="fwd", dtype="float32", groups={"world": (0,)},
             buffers=[{"A": BufferSpec((2, 3), "float32"), "B": ..., "C": ...}],
             programs=[[Gemm(out="C", a="A", b="B")]],
             inputs=[TensorBlock(0, "A", "A", (0, 2), (0, 3)), ...], outputs=[...])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulator.errors import ScheduleError
from simulator.ir.ops import CommOp, Gemm, Local, Op, Slice
from simulator.workloads.functions import FUNCTIONS, Work

DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class BufferSpec:
    """A rank-local 2-D (or 1-D) array: its shape in elements and its element type."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_BYTES:
            raise ScheduleError(f"buffer dtype {self.dtype!r} unknown; valid: {', '.join(DTYPE_BYTES)}")
        if not self.shape or any(int(n) < 1 for n in self.shape):
            raise ScheduleError(f"buffer shape {self.shape} must have positive extents")

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return self.numel * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class TensorBlock:
    """Block ``[rows, cols]`` of global tensor ``tensor`` lives in ``buffer`` on ``rank``."""

    rank: int
    buffer: str
    tensor: str
    rows: tuple[int, int]
    cols: tuple[int, int]

    @property
    def shape(self) -> tuple[int, int]:
        """The block's shape, which must equal its buffer's."""
        return (self.rows[1] - self.rows[0], self.cols[1] - self.cols[0])


@dataclass
class Schedule:
    """One algorithm's program for every rank; see the module docstring."""

    algorithm: str
    grid: tuple[int, ...]
    workload: dict
    passes: str
    dtype: str
    groups: dict[str, tuple[int, ...]]
    buffers: list[dict[str, BufferSpec]]
    programs: list[list[Op]]
    inputs: list[TensorBlock] = field(default_factory=list)
    outputs: list[TensorBlock] = field(default_factory=list)
    tensors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Global tensor name -> shape, for every tensor named by ``inputs`` and ``outputs``."""
    options: dict = field(default_factory=dict)
    """Generator options that shaped the ops, e.g. ``{"overlap": True}``; informational."""
    parts: list[list[tuple[int, str]]] = field(default_factory=list)
    """Per rank, (first step, label) of each run of ops lowering one layer part (``qkv``, ``attn``,
    ``fc1``, ...), in step order; empty when the schedule carries no labels (``part_of``)."""

    def part_of(self, rank: int, step: int) -> str:
        """The layer part step ``step`` of ``rank`` belongs to; "" when unlabelled."""
        runs = self.parts[rank] if rank < len(self.parts) else ()
        label = ""
        for first, name in runs:  # a handful of runs per rank: a scan is as fast as bisect here
            if first > step:
                break
            label = name
        return label

    @property
    def world_size(self) -> int:
        """Number of ranks."""
        return len(self.programs)

    def identity(self) -> dict:
        """What the schedule is, as every tpsim record names it: algorithm, grid, workload, passes, dtype."""
        return {"algorithm": self.algorithm, "grid": list(self.grid), "workload": self.workload,
                "passes": self.passes, "dtype": self.dtype}

    def spec(self, rank: int, buffer: str) -> BufferSpec:
        """The declaration of ``buffer`` on ``rank``; ScheduleError naming both when undeclared."""
        try:
            return self.buffers[rank][buffer]
        except KeyError:
            raise ScheduleError(f"rank {rank}: buffer {buffer!r} is not declared") from None

    def group_ranks(self, name: str) -> tuple[int, ...]:
        """The global ranks of group ``name``, in group-local order."""
        try:
            return self.groups[name]
        except KeyError:
            raise ScheduleError(f"group {name!r} is not declared") from None

    def payload_bytes(self, rank: int, op: Op) -> int:
        """This rank's payload in ``op``: the bytes of its own buffer in a communication op, else 0."""
        if not isinstance(op, CommOp):
            return 0
        return self.spec(rank, op.payload_buffer()).nbytes

    def gemm_shape(self, rank: int, op: Gemm) -> tuple[int, int, int]:
        """(m, k, n) of ``op`` on ``rank``: out is [m, n], the contraction runs over k."""
        a = self.spec(rank, op.a).shape
        b = self.spec(rank, op.b).shape
        m, k = (a[1], a[0]) if op.trans_a else (a[0], a[1])
        n = b[0] if op.trans_b else b[1]
        return m, k, n

    def local_work(self, rank: int, op: Local) -> Work:
        """What local op ``op`` costs on ``rank``: ``FUNCTIONS[op.fn].work`` of its blocks' shapes and
        its parameters (products, memory-pass elements, elementwise FLOPs)."""
        shapes = [self.spec(rank, name).shape for name in op.inputs]
        return FUNCTIONS[op.fn].work(shapes, self.spec(rank, op.out).shape, op.param_dict())

    def flops(self, rank: int, op: Op) -> int:
        """Floating-point operations of ``op``: 2mkn for a gemm; for a local op, 2mkn per product it runs
        (attention's) plus its elementwise FLOPs (``local_work``); 0 otherwise."""
        if isinstance(op, Gemm):
            m, k, n = self.gemm_shape(rank, op)
            return 2 * m * k * n
        if isinstance(op, Local):
            work = self.local_work(rank, op)
            return sum(2 * count * m * k * n for count, m, k, n in work.gemms) + work.flops
        return 0

    def memory_bytes(self, rank: int, op: Op) -> int:
        """Bytes a local or slice op moves through device memory in its memory-bound passes (reads +
        writes; a local op's from ``local_work``); 0 for gemm and comm ops and for an ``in_place`` slice
        (rows its kernels address where they lie: ``Slice``)."""
        if isinstance(op, Local):
            work = self.local_work(rank, op)
            return (work.elements * DTYPE_BYTES[self.spec(rank, op.out).dtype] + work.mask_bytes
                    + 4 * work.fp32_elements)
        if isinstance(op, Slice):
            if op.in_place:
                return 0
            out = self.spec(rank, op.out)
            rows = _extent(op.out_rows, out.shape[0])
            cols = _extent(op.out_cols, out.shape[1]) if len(out.shape) > 1 else 1
            return 2 * rows * cols * DTYPE_BYTES[out.dtype]
        return 0


def _extent(region: tuple[int, int] | None, whole: int) -> int:
    return whole if region is None else region[1] - region[0]
