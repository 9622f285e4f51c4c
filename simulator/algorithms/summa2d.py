"""2-D SUMMA / Optimus (van de Geijn and Watts 1997; Xu et al., arXiv 2104.05343) on a [q, q, 1] grid.

X and W are both split q x q. Forward: q steps; at step t the owner of X(j, t) broadcasts it along its
row, the owner of W(t, i) along its column, and every rank accumulates. Backward dX broadcasts W along
columns and reduces partials along rows; dW broadcasts X along rows and reduces along columns. This is
SUMMA2.5 with one layer, so it is ``Summa25D`` restricted to d = 1, recorded as "2d".
"""

from __future__ import annotations

from typing import ClassVar

from simulator.algorithms.summa25d import Summa25D


class Summa2D(Summa25D):
    """2-D SUMMA on [q, q, 1]; ``overlap`` prefetches the next step's broadcasts."""

    name: ClassVar[str] = "2d"
    aliases: ClassVar[tuple[str, ...]] = ("optimus",)
    summary: ClassVar[str] = "SUMMA / Optimus (Xu et al. 2021): q steps of row and column broadcasts, [q,q,1]"
    grid_rule: ClassVar[str] = "P = q^2 GPUs (a [q,q,1] grid; summa25d and cannon25d also take depth d > 1)"

    @classmethod
    def depth_error(cls, q: int, d: int) -> str | None:
        return None if d == 1 else f"2d runs on [q,q,1], got depth {d}; use summa25d or cannon25d for d > 1"
