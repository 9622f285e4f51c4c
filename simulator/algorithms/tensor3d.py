"""3-D tensor parallelism (Bian et al., arXiv 2105.14450; Colossal-AI's 3-D layers) on a [q, q, q] cube.

Each linear Y = X W gives the cube's three axes (``simulator.algorithms.cube``) three roles, an
**input** axis I, a **weight** axis W and an **output** axis O; writing c_A for a rank's coordinate on
axis A, and "rows (A, B)" for the row block c_A * q + c_B of q^2 equal blocks:

===========  ========================  =================  ========================================
tensor       rows                      columns            block
===========  ========================  =================  ========================================
X, dX        (W, I)  of M              c_O of K           [M/q^2, K/q]
W, dW        (O, W)  of K              c_I of N           [K/q^2, N/q]
Y, dY        (W, O)  of M              c_I of N           [M/q^2, N/q]
===========  ========================  =================  ========================================

Every rank holds one block of each: activations and weights are both split q^3 ways (the O(1/q^3)
memory of the paper). Per linear, as Colossal-AI's ``linear_3d``:

- forward: all-gather X over the I line (rows: [M/q, K/q], row block c_W), all-gather W over the W
  line ([K/q, N/q], row block c_O), multiply ([M/q, N/q], a partial sum over the K blocks, which vary
  with c_O), reduce-scatter over the O line onto Y's block;
- backward: all-gather dY over the O line, dX = reduce-scatter over I of dY W^T, dW = reduce-scatter
  over W of X^T dY, with the gathered X and W that the forward left (Colossal-AI saves them for the
  backward); a backward-only schedule gathers them first.

Roles alternate between consecutive linears: the even ones (QKV, FC1, the gemm) take I = x, W = z,
O = y; the odd ones (proj, FC2) swap I and O. So Y of one linear is laid out exactly as the next one's
X (rows (W, O) = (W, I'), columns c_I = c_O'), and no re-layout sits between FC1 and FC2, nor between
attention and the out-projection. tpsim follows Colossal-AI's pattern of collectives; it names the axes
of its own cube (Colossal-AI's input/weight/output parallel modes) and lays the row blocks out major
on W.

Per rank, per linear, forward + backward (elements in the op's buffer, the IR's payload; payload of
an all-gather is its output, of a reduce-scatter its input): forward AG M K/q^2 + AG K N/q^2 + RS M N/q^2;
backward AG M N/q^2 + RS M K/q^2 + RS K N/q^2 (+ AG M K/q^2 + AG K N/q^2 when backward-only): six
collectives on q-rank lines, payload 2 (M K + K N + M N)/q^2 for both passes. Received, (q-1)/q of
each.

The transformer block: X's rows are split q^2 ways by (z, x), so each rank holds b/q^2 whole sequences
(and a/q whole heads in QKV's columns): the attention core is local. A vector (bias, LayerNorm gamma
or beta) of an activation whose columns go by axis C lives on the rank of each column block whose two
other coordinates are 0; taking those two axes in x, y, z order, the forward broadcasts it along the
first (on the ranks whose second coordinate is 0) and then along the second, and the backward reduces
the partial sums back the same two ways (the second, then the first). LayerNorm's moments are
all-reduced over the C line (the ranks holding the other columns of the same rows). Colossal-AI keeps
vectors on the cube's diagonal and broadcasts them along one line; holding each on one rank costs one
broadcast more per vector and keeps a single owner per element.

Per rank, per block, the four linears (QKV [h, 3h], proj [h, h], FC1 [h, f], FC2 [f, h]) follow the form
above, 2 (M (8h + 2f) + 4h^2 + 2hf)/q^2 for both passes. Every activation that carries a vector has its
rows by z and one of x, y, so the second axis is always z, and a rank (x, y, z) with q > 1 also has,
with w = 1 + [z = 0] (its lines per vector) and 9h + f the eight vectors' summed width:

- forward: 8 w broadcasts (ln1 gamma, beta, bqkv, bproj, ln2 gamma, beta, b1, b2), payload w (9h + f)/q;
  2 all-reduces of the moments S1, S2 [M/q^2, 2], payload 4M/q^2;
- backward: 8 w reduces of the vectors' gradients, payload w (9h + f)/q; 2 all-reduces (dS1, dS2),
  4M/q^2; and, backward alone, the two gammas fetched again: 2 w broadcasts, payload 2 w h/q.

All on q-rank lines; none of them at q = 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms.base import Algorithm, Blocks, LinearNames
from simulator.algorithms.cube import AXES, ProcessCube
from simulator.errors import InputError
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllGather, AllReduce, Broadcast, Gemm, Reduce, ReduceScatter
from simulator.workloads.workload import Workload

EVEN_ROLES = {"I": "x", "W": "z", "O": "y"}
ODD_ROLES = {"I": "y", "W": "z", "O": "x"}


def _roles(lin: LinearNames) -> dict[str, str]:
    return EVEN_ROLES if lin.index % 2 == 0 else ODD_ROLES


@dataclass(frozen=True)
class Tensor3D(Algorithm):
    """3-D tensor parallelism on a [q, q, q] cube: every linear's operands split over two axes each."""

    cube: ProcessCube
    name: ClassVar[str] = "3d"
    summary: ClassVar[str] = ("3-D tensor parallelism (Bian et al. 2021): all-gather input and weight, "
                              "reduce-scatter the output, [q,q,q]")

    # -- grids -------------------------------------------------------------------------------------
    @classmethod
    def legal_grids(cls, gpus: int) -> list[tuple[int, ...]]:
        q = round(gpus ** (1 / 3))
        return [(c, c, c) for c in (q - 1, q, q + 1) if c >= 1 and c ** 3 == gpus]

    @classmethod
    def resolve_grid(cls, grid: tuple[int, ...] | None, gpus: int | None) -> tuple[int, ...]:
        if grid is None:
            if gpus is None:
                raise InputError("3d needs --grid Q,Q,Q or --gpus P (P = q^3 GPUs)")
            if gpus < 1:
                raise InputError(f"--gpus must be >= 1, got {gpus}")
            options = cls.legal_grids(gpus)
            if not options:
                raise InputError(f"3d on --gpus {gpus}: no grid fits; 3d needs P = q^3 GPUs (a [q,q,q] cube), "
                                 f"which {gpus} is not")
            return options[0]
        if len(grid) != 3 or len(set(grid)) != 1 or grid[0] < 1:
            raise InputError(f"3d runs on a cube: --grid Q,Q,Q with three equal positive factors, got "
                             f"{','.join(map(str, grid))}")
        if gpus is not None and grid[0] ** 3 != gpus:
            raise InputError(f"--grid {','.join(map(str, grid))} has q^3 = {grid[0] ** 3} ranks but --gpus is {gpus}")
        return tuple(grid)

    @classmethod
    def on_grid(cls, shape: tuple[int, ...], overlap: bool = False) -> "Tensor3D":
        return cls(ProcessCube(shape[0]))

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return (self.cube.q,) * 3

    @property
    def world_size(self) -> int:
        return self.cube.world_size

    def groups(self) -> dict[str, tuple[int, ...]]:
        return self.cube.groups()

    def check(self, workload: Workload) -> None:
        """NotApplicable unless q^2 divides M and each linear's K, and q each linear's N (and, for the
        transformer, the batch by q^2 and the heads by q)."""
        q = self.cube.q
        where = f"{self.name} on [{q},{q},{q}]"
        self._require_block_split(where, workload, q * q, "q^2", q, "q")
        rows = {"M": workload.m, **{lin.k_label: lin.k for lin in workload.linears()}}
        self._require_divisible(where, rows, q * q, "q^2")
        self._require_divisible(where, {lin.n_label: lin.n for lin in workload.linears()}, q, "q")

    # -- layouts -----------------------------------------------------------------------------------
    def _blocks(self, rows: int, cols: int, row_axes: tuple[str, str], col_axis: str) -> Blocks:
        q, out = self.cube.q, []
        rb, cb = rows // (q * q), cols // q
        for rank in range(self.world_size):
            c = self.cube.coords(rank)
            r = c[row_axes[0]] * q + c[row_axes[1]]
            out.append((rank, (r * rb, (r + 1) * rb), (c[col_axis] * cb, (c[col_axis] + 1) * cb)))
        return out

    def input_blocks(self, lin: LinearNames) -> Blocks:
        a = _roles(lin)
        return self._blocks(lin.m, lin.k, (a["W"], a["I"]), a["O"])

    def output_blocks(self, lin: LinearNames) -> Blocks:
        a = _roles(lin)
        return self._blocks(lin.m, lin.n, (a["W"], a["O"]), a["I"])

    def weight_blocks(self, lin: LinearNames) -> Blocks:
        a = _roles(lin)
        return self._blocks(lin.k, lin.n, (a["O"], a["W"]), a["I"])

    # -- the three products ------------------------------------------------------------------------
    def _gathered(self, b: ScheduleBuilder, rank: int, name: str, axis: str, shape: tuple[int, int]) -> str:
        """``<name>_g``, the all-gather of ``name`` over the ``axis`` line: issued unless this schedule's
        forward already left it on ``rank``."""
        full = f"{name}_g"
        if full not in b.buffers[rank]:
            b.buffer(rank, full, shape)
            b.emit(rank, AllGather(group=self.cube.line(axis, rank), inp=name, out=full, axis=0))
        return full

    def _sizes(self, lin: LinearNames) -> tuple[int, int, int, int]:
        q = self.cube.q
        return q, lin.m // q, lin.k // q, lin.n // q

    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        """Y = reduce_scatter_O(all_gather_I(X) all_gather_W(W))."""
        a, (q, m, k, n) = _roles(lin), self._sizes(lin)
        for rank in range(self.world_size):
            x = self._gathered(b, rank, lin.x, a["I"], (m, k))
            w = self._gathered(b, rank, lin.w, a["W"], (k, n))
            part = b.buffer(rank, f"{lin.y}_part", (m, n))
            b.emit(rank, Gemm(out=part, a=x, b=w))
            b.buffer(rank, lin.y, (m // q, n))
            b.emit(rank, ReduceScatter(group=self.cube.line(a["O"], rank), inp=part, out=lin.y, axis=0))

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        """dX = reduce_scatter_I(all_gather_O(dY) all_gather_W(W)^T)."""
        a, (q, m, k, n) = _roles(lin), self._sizes(lin)
        for rank in range(self.world_size):
            dyg = self._gathered(b, rank, dy, a["O"], (m, n))
            w = self._gathered(b, rank, lin.w, a["W"], (k, n))
            part = b.buffer(rank, f"{dx}_part", (m, k))
            b.emit(rank, Gemm(out=part, a=dyg, b=w, trans_b=True))
            b.buffer(rank, dx, (m // q, k))
            b.emit(rank, ReduceScatter(group=self.cube.line(a["I"], rank), inp=part, out=dx, axis=0))

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        """dW = reduce_scatter_W(all_gather_I(X)^T all_gather_O(dY)), dY's gather from ``backward_input``."""
        a, (q, m, k, n) = _roles(lin), self._sizes(lin)
        for rank in range(self.world_size):
            x = self._gathered(b, rank, lin.x, a["I"], (m, k))
            part = b.buffer(rank, f"{dw}_part", (k, n))
            b.emit(rank, Gemm(out=part, a=x, b=f"{dy}_g", trans_a=True))
            b.buffer(rank, dw, (k // q, n))
            b.emit(rank, ReduceScatter(group=self.cube.line(a["W"], rank), inp=part, out=dw, axis=0))

    # -- the transformer's vectors and row statistics ----------------------------------------------
    def _column_axis(self, layout: Blocks) -> str:
        """The axis whose coordinate alone says which columns a block of ``layout`` holds."""
        for axis in AXES:
            seen: dict[int, tuple[int, int]] = {}
            if all(seen.setdefault(self.cube.coords(rank)[axis], cols) == cols for rank, _, cols in layout):
                return axis
        raise AssertionError(f"{self.name}: no cube axis splits the columns of this layout")

    def _other_axes(self, layout: Blocks) -> tuple[str, str, str]:
        """(column axis, first row axis, second row axis) of ``layout``."""
        col = self._column_axis(layout)
        first, second = (axis for axis in AXES if axis != col)
        return col, first, second

    def vector_blocks(self, layout: Blocks) -> Blocks:
        _, first, second = self._other_axes(layout)
        return [(rank, (0, 1), cols) for rank, _, cols in layout
                if self.cube.coords(rank)[first] == 0 and self.cube.coords(rank)[second] == 0]

    def fetch_vector(self, b: ScheduleBuilder, name: str, layout: Blocks) -> dict[int, str]:
        """Broadcast from the owner (row axes at 0) along the first row axis, then along the second."""
        _, first, second = self._other_axes(layout)
        held = {}
        for rank, _, cols in layout:
            c = self.cube.coords(rank)
            held[rank] = b.buffer(rank, name if c[first] == 0 and c[second] == 0 else f"{name}_ws",
                                  (1, cols[1] - cols[0]))
            if self.cube.q == 1:
                continue
            if c[second] == 0:
                b.emit(rank, Broadcast(group=self.cube.line(first, rank), root=0, buf=held[rank]))
            b.emit(rank, Broadcast(group=self.cube.line(second, rank), root=0, buf=held[rank]))
        return held

    def reduce_vector_grad(self, b: ScheduleBuilder, layout: Blocks, out: str, compute) -> None:
        """Reduce the partial sums along the second row axis, then along the first, onto the owner."""
        _, first, second = self._other_axes(layout)
        for rank, _, cols in layout:
            c, shape = self.cube.coords(rank), (1, cols[1] - cols[0])
            if self.cube.q == 1:
                compute(rank, b.buffer(rank, out, shape))
                continue
            part = b.buffer(rank, f"{out}_part", shape)
            compute(rank, part)
            rows_sum = b.buffer(rank, f"{out}_rows", shape)
            b.emit(rank, Reduce(group=self.cube.line(second, rank), root=0, buf=part, out=rows_sum))
            if c[second] == 0:
                b.buffer(rank, out, shape)
                b.emit(rank, Reduce(group=self.cube.line(first, rank), root=0, buf=rows_sum, out=out))

    def all_reduce_rows(self, b: ScheduleBuilder, buf: str, layout: Blocks) -> None:
        if self.cube.q == 1:
            return
        col = self._column_axis(layout)
        for rank, _, _ in layout:
            b.emit(rank, AllReduce(group=self.cube.line(col, rank), buf=buf))
