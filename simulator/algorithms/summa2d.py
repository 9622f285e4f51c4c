"""2-D SUMMA / Optimus (van de Geijn and Watts 1997; Xu et al., arXiv 2104.05343) on a [q, q, 1] grid.

X and W are both split q x q. Forward: q steps; at step t the owner of X(j, t) broadcasts it along its
row, the owner of W(t, i) along its column, and every rank accumulates. Backward dX broadcasts W along
columns and reduces partials along rows; dW broadcasts X along rows and reduces along columns. This is
SUMMA2.5 with one layer, so it reuses ``simulator.algorithms.summa_steps``.
"""

from __future__ import annotations

from simulator.algorithms.grid import ProcessGrid
from simulator.algorithms.summa25d import Summa25D


def summa2d(q: int, overlap: bool = False) -> Summa25D:
    """2-D SUMMA on [q, q, 1]; ``overlap`` prefetches the next step's broadcasts."""
    return Summa25D(ProcessGrid(q, 1), name="2d", overlap=overlap)
