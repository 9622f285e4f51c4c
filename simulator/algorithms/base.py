"""What every tensor-parallel algorithm provides: the ``Algorithm`` base class, and one linear as lowered.

An algorithm is one class (``simulator.algorithms.registry`` lists them) that owns

- its name and aliases, whether it supports ``--overlap``, and the grids it accepts for P GPUs
  (``legal_grids``, ``resolve_grid``), class-level, before any workload is known;
- on one grid (an instance): its process groups, its divisibility checks for a workload (``check``,
  raising ``NotApplicable``), where the blocks of each linear's input, output and weight live, and how
  to emit one linear's forward, backward-input and backward-weight products as IR ops;
- for the transformer block, three more rules (``GridAlgorithm`` has those of a [q, q, d] grid):
  where a [1, n] parameter vector (a bias, LayerNorm's gamma and beta) applied to an activation is kept
  (``vector_blocks``) and brought to the ranks using it (``fetch_vector``); how its gradient's per-rank
  partial sums are summed to where it is kept (``reduce_vector_grad``); and how per-row statistics are
  summed over the ranks holding other columns of the same rows (``all_reduce_rows``, LayerNorm's).

``simulator.algorithms.compose`` strings a workload's layers together from these; no algorithm knows
about workloads beyond its linears. Grids are ``(P,)`` for 1-D and ``(q, q, d)`` otherwise; the default
grid methods here are those of a [q, q, d] grid, with ``depth_error`` saying which depths an algorithm
refuses.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms.grid import ProcessGrid
from simulator.errors import InputError, NotApplicable
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Broadcast, Reduce
from simulator.workloads.layers import Linear
from simulator.workloads.workload import Workload

__all__ = ["Algorithm", "Blocks", "GridAlgorithm", "LinearNames", "linear_extents"]

Blocks = list[tuple[int, tuple[int, int], tuple[int, int]]]
"""(rank, rows, cols) for every block of a tensor, replicas included."""


@dataclass(frozen=True)
class LinearNames:
    """One linear Y = X W as lowered: buffer names, global sizes X [m, k], W [k, n], and its labels.

    ``index`` is its position among the workload's linears (1-D Megatron alternates column- and
    row-parallel by it); ``k_label`` / ``n_label`` name the sizes in messages ("K", "4*hidden").
    """

    x: str
    w: str
    y: str
    m: int
    k: int
    n: int
    index: int = 0
    k_label: str = "K"
    n_label: str = "N"

    @classmethod
    def of(cls, linear: Linear, m: int) -> "LinearNames":
        """The lowering of a workload's ``Linear`` record on m tokens."""
        return cls(linear.x, linear.w, linear.y, m, linear.k, linear.n, linear.index, linear.k_label,
                   linear.n_label)


class Algorithm(ABC):
    """Base of every algorithm; subclasses set the class attributes and implement the abstract methods."""

    name: ClassVar[str] = ""
    """The canonical name, as ``--algo`` takes it and the Schedule records it."""
    aliases: ClassVar[tuple[str, ...]] = ()
    summary: ClassVar[str] = ""
    """One line for help and docs: the paper and the grid."""
    supports_overlap: ClassVar[bool] = False
    """Whether ``--overlap`` (communication prefetched behind compute) applies."""
    supports_async_dgrad: ClassVar[bool] = False
    """Whether Megatron-LM's asynchronous input-gradient communication applies (``megatron_1d``)."""
    supports_tp_comm_overlap: ClassVar[bool] = False
    """Whether ``--tp-comm-overlap`` (Transformer Engine's chunked overlap) applies (``megatron_1d_sp``)."""
    square_grid: ClassVar[bool] = True
    """True for [q, q, d] grids (``--grid Q,Q,D``), False for 1-D (``--gpus P``)."""
    grid_rule: ClassVar[str] = "P = q*q*d GPUs (a [q,q,d] grid)"
    """Which numbers of GPUs have a grid, for the message when ``--gpus P`` has none."""

    # -- grids (class level) -----------------------------------------------------------------------
    @classmethod
    def depth_error(cls, q: int, d: int) -> str | None:
        """Why this algorithm cannot run on [q, q, d], or None when it can."""
        return None

    @classmethod
    def legal_grids(cls, gpus: int) -> list[tuple[int, ...]]:
        """Every grid this algorithm can use on ``gpus`` ranks, before workload divisibility, largest q first."""
        grids = []
        for q in range(1, math.isqrt(gpus) + 1):
            if gpus % (q * q) == 0 and cls.depth_error(q, gpus // (q * q)) is None:
                grids.append((q, q, gpus // (q * q)))
        return sorted(grids, reverse=True)

    @classmethod
    def resolve_grid(cls, grid: tuple[int, ...] | None, gpus: int | None) -> tuple[int, ...]:
        """The grid ``--grid`` and ``--gpus`` describe together; InputError naming what does not fit."""
        if grid is None:
            if gpus is None:
                raise InputError(f"{cls.name} needs --grid Q,Q,D or --gpus P")
            if gpus < 1:
                raise InputError(f"--gpus must be >= 1, got {gpus}")
            options = cls.legal_grids(gpus)
            if not options:
                raise InputError(f"{cls.name} on --gpus {gpus}: no grid fits; {cls.name} needs {cls.grid_rule}, "
                                 f"which {gpus} is not")
            if len(options) != 1:
                shown = " ".join(",".join(map(str, g)) for g in options)
                raise InputError(f"{cls.name} on --gpus {gpus} needs --grid Q,Q,D; grids with q*q*d = {gpus}: "
                                 f"{shown}")
            return options[0]
        if len(grid) != 3 or grid[0] != grid[1] or min(grid) < 1:
            raise InputError(f"--grid must be Q,Q,D with positive Q and D (a square q x q grid), got "
                             f"{','.join(map(str, grid))}")
        q, _, d = grid
        if gpus is not None and q * q * d != gpus:
            raise InputError(f"--grid {q},{q},{d} has q*q*d = {q * q * d} ranks but --gpus is {gpus}")
        error = cls.depth_error(q, d)
        if error is not None:
            raise InputError(error)
        return tuple(grid)

    @classmethod
    @abstractmethod
    def on_grid(cls, shape: tuple[int, ...], overlap: bool = False) -> "Algorithm":
        """The algorithm instance on a grid that ``resolve_grid`` returned."""

    # -- one grid (instance level) -----------------------------------------------------------------
    @property
    @abstractmethod
    def grid_shape(self) -> tuple[int, ...]:
        """The grid the Schedule records: (P,) or (q, q, d)."""

    @property
    @abstractmethod
    def world_size(self) -> int:
        """How many ranks the grid has."""

    @abstractmethod
    def groups(self) -> dict[str, tuple[int, ...]]:
        """Every process group the products use, members in group-local order."""

    def block_groups(self) -> dict[str, tuple[int, ...]]:
        """The groups the transformer block's vectors and row statistics use besides ``groups()``."""
        return {}

    @abstractmethod
    def check(self, workload: Workload) -> None:
        """``NotApplicable`` naming the first size of ``workload`` this grid cannot split."""

    @abstractmethod
    def input_blocks(self, lin: LinearNames) -> Blocks:
        """Where the blocks of ``lin.x`` (and of its gradient) live, as ``lin`` reads them."""

    @abstractmethod
    def output_blocks(self, lin: LinearNames) -> Blocks:
        """Where the blocks of ``lin.y`` (and of its gradient) live after the forward."""

    @abstractmethod
    def weight_blocks(self, lin: LinearNames) -> Blocks:
        """Where the blocks of ``lin.w`` (and of its gradient) live."""

    @abstractmethod
    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        """Emit Y = X W on every rank."""

    @abstractmethod
    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        """Emit dX = dY W^T on every rank."""

    @abstractmethod
    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        """Emit dW = X^T dY on every rank."""

    # -- the transformer block: parameter vectors and row statistics -------------------------------
    @abstractmethod
    def vector_blocks(self, layout: Blocks) -> Blocks:
        """Where a [1, n] parameter added to (or scaling) an activation of ``layout`` is kept, and its gradient."""

    @abstractmethod
    def fetch_vector(self, b: ScheduleBuilder, name: str, layout: Blocks) -> dict[int, str]:
        """Emit what brings every rank of ``layout`` its columns of vector ``name``; return the buffer
        holding them on each rank."""

    @abstractmethod
    def reduce_vector_grad(self, b: ScheduleBuilder, layout: Blocks, out: str, compute) -> None:
        """Emit the gradient ``out`` of a vector applied to ``layout``: ``compute(rank, buffer)`` emits a
        rank's partial sum over its rows into ``buffer``; the algorithm sums the partials to where the
        vector is kept."""

    @abstractmethod
    def all_reduce_rows(self, b: ScheduleBuilder, buf: str, layout: Blocks) -> None:
        """Emit the sum of per-row statistics ``buf`` over the ranks holding other columns of the same rows."""

    # -- helpers for subclasses --------------------------------------------------------------------
    def _require_divisible(self, where: str, extents: dict[str, int], by: int, by_label: str) -> None:
        """NotApplicable for the first extent that ``by`` does not divide."""
        for label, value in extents.items():
            if value % by:
                raise NotApplicable(f"{where}: {label}={value} must be divisible by {by_label} = {by}")

    @staticmethod
    def _require_block_split(where: str, workload: Workload, sequences: int, sequences_label: str, heads: int,
                             heads_label: str) -> None:
        """NotApplicable unless the transformer's sequences split ``sequences`` ways and its heads and
        key/value heads ``heads`` ways: the attention core is local only on whole sequences and whole
        key/value groups (Megatron-LM likewise requires the query groups divisible by the tensor-parallel
        size)."""
        if workload.name != "transformer":
            return
        if workload.batch % sequences:
            raise NotApplicable(f"{where}: batch={workload.batch} must be divisible by {sequences_label} = "
                                f"{sequences} (the attention core needs whole sequences on each rank)")
        if workload.heads % heads:
            raise NotApplicable(f"{where}: heads={workload.heads} must be divisible by {heads_label} = {heads}")
        if workload.kv_heads % heads:  # grouped-query attention: the key/value heads split like the heads
            raise NotApplicable(f"{where}: kv_heads={workload.kv_heads} must be divisible by {heads_label} = {heads} "
                                f"(the attention core needs whole key/value groups on each rank)")


class GridAlgorithm(Algorithm):
    """An algorithm on a [q, q, d] ``ProcessGrid``, which subclasses hold as their ``grid`` field.

    The transformer block's vectors follow Tesseract (Colossal-AI's ``add_bias_2p5d`` and 2.5-D
    LayerNorm): a bias or LayerNorm parameter's columns i live on row 0 of column group (i, k), on every
    layer k that holds activations; the forward broadcasts them over the column group, the backward
    reduces the per-rank partial sums to row 0 over the column group and, where the weights are
    replicated over depth (``depth_replicated``), all-reduces them over the depth group, as every
    weight gradient is. Holding them on one row (rather than split q^2 ways and all-gathered, as
    Colossal-AI's 2-D layers do) keeps one owner per element with the same per-rank bytes, and needs no
    divisibility of n by q^2. LayerNorm's row moments are all-reduced over the row group.
    """

    grid: ProcessGrid

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return (self.grid.q, self.grid.q, self.grid.d)

    @property
    def world_size(self) -> int:
        return self.grid.world_size

    @property
    def depth_replicated(self) -> bool:
        """Whether weights (and vectors) are replicated over the depth layers, so their gradients are
        all-reduced over depth."""
        return False

    def vector_blocks(self, layout: Blocks) -> Blocks:
        return [(rank, (0, 1), cols) for rank, _, cols in layout if self.grid.coords(rank)[0] == 0]

    def fetch_vector(self, b: ScheduleBuilder, name: str, layout: Blocks) -> dict[int, str]:
        held = {}
        for rank, _, cols in layout:
            j, i, k = self.grid.coords(rank)
            held[rank] = b.buffer(rank, name if j == 0 else f"{name}_ws", (1, cols[1] - cols[0]))
            if self.grid.q > 1:
                b.emit(rank, Broadcast(group=self.grid.col_name(i, k), root=0, buf=held[rank]))
        return held

    def reduce_vector_grad(self, b: ScheduleBuilder, layout: Blocks, out: str, compute) -> None:
        for rank, _, cols in layout:
            j, i, k = self.grid.coords(rank)
            shape = (1, cols[1] - cols[0])
            b.buffer(rank, out, shape)
            if self.grid.q == 1:
                compute(rank, out)
            else:
                part = b.buffer(rank, f"{out}_part", shape)
                compute(rank, part)
                b.emit(rank, Reduce(group=self.grid.col_name(i, k), root=0, buf=part, out=out))
            if j == 0 and self.depth_replicated:
                b.emit(rank, AllReduce(group=self.grid.depth_name(j, i), buf=out))

    def all_reduce_rows(self, b: ScheduleBuilder, buf: str, layout: Blocks) -> None:
        if self.grid.q == 1:
            return
        for rank, _, _ in layout:
            j, _, k = self.grid.coords(rank)
            b.emit(rank, AllReduce(group=self.grid.row_name(j, k), buf=buf))


def linear_extents(workload: Workload) -> dict[str, int]:
    """Every weight extent of ``workload``'s linears by its label, in order: K, N or hidden, 4*hidden."""
    extents: dict[str, int] = {}
    for linear in workload.linears():
        extents.setdefault(linear.k_label, linear.k)
        extents.setdefault(linear.n_label, linear.n)
    return extents
