"""The process cube [q, q, q] of 3-D tensor parallelism: rank coordinates and its three families of lines.

Convention (the [q, q, d] grid's, with d = q): rank of (x = i, y = j, z = k) is ``r = k*q*q + j*q + i``.
A **line** is the q ranks that differ in one coordinate only; the three families:

- ``x_j{j}_k{k}``: varies i (the fastest: q consecutive ranks, inside one server under the default
  placement);
- ``y_i{i}_k{k}``: varies j (stride q);
- ``z_i{i}_j{j}``: varies k (stride q*q).

Members are in coordinate order, so a line's group-local rank is the coordinate that varies. Worked
example, [2, 2, 2] (ranks 0..7, r = 4k + 2j + i)::

    x_j0_k0 = (0, 1)   x_j1_k0 = (2, 3)   x_j0_k1 = (4, 5)   x_j1_k1 = (6, 7)
    y_i0_k0 = (0, 2)   y_i1_k0 = (1, 3)   y_i0_k1 = (4, 6)   y_i1_k1 = (5, 7)
    z_i0_j0 = (0, 4)   z_i1_j0 = (1, 5)   z_i0_j1 = (2, 6)   z_i1_j1 = (3, 7)
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import InputError

AXES = ("x", "y", "z")
"""The cube's axes, by the coordinate each varies: x = i, y = j, z = k."""


@dataclass(frozen=True)
class ProcessCube:
    """q x q x q ranks; p = q^3."""

    q: int

    def __post_init__(self) -> None:
        if self.q < 1:
            raise InputError(f"cube [q, q, q] needs q >= 1, got q={self.q}")

    @property
    def world_size(self) -> int:
        return self.q ** 3

    def coords(self, rank: int) -> dict[str, int]:
        """{"x": i, "y": j, "z": k} of ``rank``."""
        k, rest = divmod(rank, self.q * self.q)
        j, i = divmod(rest, self.q)
        return {"x": i, "y": j, "z": k}

    def rank(self, x: int, y: int, z: int) -> int:
        return z * self.q * self.q + y * self.q + x

    def line(self, axis: str, rank: int) -> str:
        """The name of the line through ``rank`` along ``axis``."""
        c = self.coords(rank)
        if axis == "x":
            return f"x_j{c['y']}_k{c['z']}"
        if axis == "y":
            return f"y_i{c['x']}_k{c['z']}"
        return f"z_i{c['x']}_j{c['y']}"

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Every line of every family, members in coordinate order (module doc)."""
        q, out = self.q, {}
        for axis in AXES:
            for rank in range(self.world_size):
                name = self.line(axis, rank)
                if name not in out:
                    c = self.coords(rank)
                    members = []
                    for t in range(q):
                        c[axis] = t
                        members.append(self.rank(c["x"], c["y"], c["z"]))
                    out[name] = tuple(members)
        return out
