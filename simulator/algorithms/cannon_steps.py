"""Cannon multiply-and-shift steps for one block product Out = L R on a [q, q, c] grid.

Solomonik and Demmel, "Communication-optimal parallel 2.5D matrix multiplication and LU factorization
algorithms", Euro-Par 2011, the 2.5D Cannon algorithm. With s = q/c, rank (j, i, k) computes the
partial sum over l = l0, l0+1, ..., l0+s-1 (mod q) of L(j, l) R(l, i), where

    l0 = (i + j + k*s) mod q,

so the c layers together cover all q values of l, and a depth reduce sums the partials onto layer 0.

Phases, in program order on every rank (all transfers are explicit ops; nothing moves for free):

1. **Depth broadcast** (c > 1): layer 0's block of each factor is broadcast over the depth group of
   (j, i), root group-local 0, into ``<name>_rep``. A factor whose ``<name>_rep`` the schedule already
   declares (an earlier product broadcast it: the forward's B reused by dA = dC B^T) is not sent again:
   the replica is still there, as it would be on a real machine.
2. **Skew**: each rank sends the block it holds to the rank of its layer that needs it first and
   receives the block it needs first (async send + recv, then waits). A block already at home is not sent.
3. **s multiply steps**, the last without a shift: before each gemm but the last, L moves one column
   left in its row and R one row up in its column by async send + recv into the other of two
   workspaces ``<name>_cur0`` / ``<name>_cur1``; the gemm runs while they are in flight (it only reads
   the block being sent) and the waits follow it.
4. **Depth reduce** (c > 1) of ``<out>_part`` onto layer 0's ``<out>``.

A factor may be *stored transposed*: its layer-0 rank (a, b) holds the transpose of the block (b, a)
that the product needs (R = B^T in dA = dC B^T, L = A^T in dB = A^T dC). Then the skew also does the
transpose re-layout: the stored block B(a, b) is R's block (b, a) and goes straight to the rank that
needs it first, one message instead of a transpose message followed by a skew message. The gemm reads
it with ``trans_a`` / ``trans_b``, a flag of the local GEMM, not a data movement.

Skew index math, worked example on [4, 4, 2] (s = 2), rank (j, i, k) = (1, 2, 1): l0 = (2 + 1 + 2) mod 4
= 1, so it needs L(1, 1) and R(1, 2) first, then L(1, 2) and R(2, 2) after one shift. For an untransposed
L, block L(j, l) goes to column (l - j - k*s) mod q of row j: L(1, 1) -> column (1 - 1 - 2) mod 4 = 2.
For an untransposed R, block R(l, i) goes to row (l - i - k*s) mod q of column i: R(1, 2) -> row
(1 - 2 - 2) mod 4 = 1, i.e. it stays home (no message). Layer 0 of the same (j, i) starts at l0 = 3 and
does l = 3, 0; layer 1 does l = 1, 2: together all four.

Per rank per product (blocks |L|, |R|, |O| in bytes as stored): 4(s-1) shift messages of
2(s-1)(|L| + |R|) bytes; skew messages 2 per factor that leaves home (an untransposed L stays home iff
(j + k*s) mod q = 0, an untransposed R iff (i + k*s) mod q = 0, a transposed factor iff i = j and
(i + k*s) mod q = 0), |block| bytes each; when c > 1, one depth broadcast per factor not yet replicated
(|block| bytes) and one depth reduce (|O| bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.algorithms.grid import ProcessGrid
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Broadcast, Gemm, Recv, Reduce, Send, Wait


@dataclass(frozen=True)
class Factor:
    """One factor of Out = L R: the tensor whose blocks layer 0 holds, its stored block shape, and whether
    each stored block is the transpose of the block the product needs."""

    name: str
    shape: tuple[int, int]
    transposed: bool = False

    @property
    def needed_shape(self) -> tuple[int, int]:
        """The shape of the block the product multiplies."""
        return (self.shape[1], self.shape[0]) if self.transposed else self.shape

    def home(self, r: int, c: int) -> tuple[int, int]:
        """(row, column) of the rank that stores the product's block (r, c) of this factor."""
        return (c, r) if self.transposed else (r, c)


def _replicated(b: ScheduleBuilder, grid: ProcessGrid, name: str) -> bool:
    """Whether an earlier product already broadcast ``name`` over depth (layer 1 declares its replica)."""
    return grid.d > 1 and f"{name}_rep" in b.buffers[grid.rank(0, 0, 1)]


def _other(name: str, current: str) -> str:
    """The double-buffer workspace of ``name`` that ``current`` is not."""
    first = f"{name}_cur0"
    return f"{name}_cur1" if current == first else first


def multiply(b: ScheduleBuilder, grid: ProcessGrid, left: Factor, right: Factor, out: str) -> None:
    """Emit Out = L R on every rank: broadcast, skew, q/c multiply-and-shift steps, reduce onto layer 0."""
    if left.name == right.name:
        raise AssertionError(f"cannon: both factors are {left.name!r}; workspaces would collide")
    q, c = grid.q, grid.d
    s = q // c
    out_shape = (left.needed_shape[0], right.needed_shape[1])
    fresh = [f for f in (left, right) if c > 1 and not _replicated(b, grid, f.name)]
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        held = {f.name: f.name if k == 0 else b.buffer(rank, f"{f.name}_rep", f.shape) for f in (left, right)}
        for f in fresh:
            b.emit(rank, Broadcast(group=grid.depth_name(j, i), root=0, buf=held[f.name]))

        # Skew. The product's block (r, cc) of L is needed first by (r, cc - r - ks), of R by (r - cc - ks, cc).
        l0 = (i + j + k * s) % q
        need = {left.name: left.home(j, l0), right.name: right.home(l0, i)}
        r, cc = left.home(j, i)  # the product's block of L that this rank stores (home is an involution)
        dest = {left.name: (r, (cc - r - k * s) % q)}
        r, cc = right.home(j, i)
        dest[right.name] = ((r - cc - k * s) % q, cc)
        cur: dict[str, str] = {}
        waits = []
        for f in (left, right):
            cur[f.name] = held[f.name]
            if dest[f.name] != (j, i):
                b.emit(rank, Send(peer=grid.rank(*dest[f.name], k), buf=held[f.name], handle=f"{f.name}_send"))
                waits.append(f"{f.name}_send")
            if need[f.name] != (j, i):
                cur[f.name] = b.buffer(rank, f"{f.name}_cur0", f.shape)
                b.emit(rank, Recv(peer=grid.rank(*need[f.name], k), buf=cur[f.name], handle=f"{f.name}_recv"))
                waits.append(f"{f.name}_recv")
        for handle in waits:
            b.emit(rank, Wait(handle))

        b.buffer(rank, out, out_shape)
        part = out if c == 1 else b.buffer(rank, f"{out}_part", out_shape)
        # Shift partners: L travels left along the row (arrives from the right), R up the column.
        peers = {left.name: (grid.rank(j, (i - 1) % q, k), grid.rank(j, (i + 1) % q, k)),
                 right.name: (grid.rank((j - 1) % q, i, k), grid.rank((j + 1) % q, i, k))}
        # The steps' ops by their fields (``emit_fields``: made once, most repeat across ranks).
        for t in range(s):
            shift = t < s - 1
            nxt = {}
            if shift:
                for f in (left, right):
                    nxt[f.name] = b.buffer(rank, _other(f.name, cur[f.name]), f.shape)
                    to, frm = peers[f.name]
                    b.emit_fields(rank, Send, to, cur[f.name], f"{f.name}_send")  # peer, buf, handle
                    b.emit_fields(rank, Recv, frm, nxt[f.name], f"{f.name}_recv")
            # out, a, b, trans_a, trans_b, accumulate
            b.emit_fields(rank, Gemm, part, cur[left.name], cur[right.name], left.transposed, right.transposed,
                          t > 0)
            if shift:
                for f in (left, right):
                    b.emit_fields(rank, Wait, f"{f.name}_send")
                    b.emit_fields(rank, Wait, f"{f.name}_recv")
                cur = nxt
        if c > 1:
            b.emit(rank, Reduce(group=grid.depth_name(j, i), root=0, buf=part, out=out))
