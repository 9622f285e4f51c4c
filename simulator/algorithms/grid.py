"""The process grid [q, q, d]: rank coordinates and the row, column and depth groups, built by slicing.

Convention: rank of (row j, column i, depth k) is ``r = k*q*q + j*q + i``. A grid object is
passed to whatever needs it; there is no global grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.errors import InputError


@dataclass(frozen=True)
class ProcessGrid:
    """q rows x q columns in each of d depth layers; p = q*q*d ranks."""

    q: int
    d: int = 1

    def __post_init__(self) -> None:
        if self.q < 1 or self.d < 1:
            raise InputError(f"grid [q, q, d] needs q >= 1 and d >= 1, got q={self.q}, d={self.d}")

    @classmethod
    def for_world(cls, q: int, d: int, world_size: int) -> "ProcessGrid":
        """The [q, q, d] grid, checking that it has exactly ``world_size`` ranks."""
        grid = cls(q, d)
        if grid.world_size != world_size:
            raise InputError(f"grid [{q},{q},{d}] has q*q*d = {q}*{q}*{d} = {grid.world_size} ranks, "
                             f"not {world_size}")
        return grid

    @property
    def world_size(self) -> int:
        """p = q*q*d."""
        return self.q * self.q * self.d

    @property
    def ranks(self) -> np.ndarray:
        """Ranks as an array indexed [k, j, i] (depth, row, column)."""
        return np.arange(self.world_size).reshape(self.d, self.q, self.q)

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(j, i, k) = (row, column, depth) of ``rank``."""
        k, rest = divmod(rank, self.q * self.q)
        j, i = divmod(rest, self.q)
        return j, i, k

    def rank(self, j: int, i: int, k: int = 0) -> int:
        """The rank at row j, column i, depth k."""
        return k * self.q * self.q + j * self.q + i

    @staticmethod
    def row_name(j: int, k: int) -> str:
        return f"row_j{j}_k{k}"

    @staticmethod
    def col_name(i: int, k: int) -> str:
        return f"col_i{i}_k{k}"

    @staticmethod
    def depth_name(j: int, i: int) -> str:
        return f"depth_j{j}_i{i}"

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Every row, column and depth group, members in group-local order.

        Worked example, [2, 2, 2] (ranks 0..7, r = k*4 + j*2 + i)::

            row_j0_k0 = (0, 1)   row_j1_k0 = (2, 3)   row_j0_k1 = (4, 5)   row_j1_k1 = (6, 7)
            col_i0_k0 = (0, 2)   col_i1_k0 = (1, 3)   col_i0_k1 = (4, 6)   col_i1_k1 = (5, 7)
            depth_j0_i0 = (0, 4) depth_j0_i1 = (1, 5) depth_j1_i0 = (2, 6) depth_j1_i1 = (3, 7)

        A row group varies i (its local rank is the column index), a column group varies j, a depth
        group varies k.
        """
        ranks = self.ranks
        out: dict[str, tuple[int, ...]] = {}
        for k in range(self.d):
            for j in range(self.q):
                out[self.row_name(j, k)] = tuple(int(r) for r in ranks[k, j, :])
        for k in range(self.d):
            for i in range(self.q):
                out[self.col_name(i, k)] = tuple(int(r) for r in ranks[k, :, i])
        for j in range(self.q):
            for i in range(self.q):
                out[self.depth_name(j, i)] = tuple(int(r) for r in ranks[:, j, i])
        return out
