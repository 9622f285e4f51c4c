"""What every layer kind shares: gradient names, and the record of a summed product."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from simulator.errors import NotApplicable
from simulator.workloads.kernels.norm_variants import names

__all__ = ["Sum", "grad", "norm_functions", "whole_rows"]


def grad(name: str) -> str:
    """The name of the gradient of tensor ``name``: ``"dX"`` for ``"X"``."""
    return "d" + name


def whole_rows(layout, cols: int) -> bool:
    """Whether every block of ``layout`` (rank, rows, cols) holds all ``cols`` columns of its rows: where a
    norm needs no row statistic summed across ranks and runs as the frameworks' fused kernel."""
    return all(block_cols == (0, cols) for _, _, block_cols in layout)


def norm_functions(low, layout, cols: int, norm: str, kernel: str) -> dict[str, str] | None:
    """The function names (by role) of the norm's one-kernel version on ``layout``'s whole rows, under
    ``kernel`` (``kernels.norm_variants``); None where the algorithm splits the columns and the norm runs
    as its pieces, whose row statistic is all-reduced between kernels: no framework's norm kernel runs
    there, so any kernel but ``fused`` (the default, which names none) is NotApplicable."""
    if whole_rows(layout, cols):
        return names(norm, kernel)
    if kernel != "fused":
        raise NotApplicable(f"--norm-kernel {kernel}: {low.alg.name or 'this algorithm'} splits the {norm}'s columns "
                            f"over ranks (its row statistic all-reduced between the pieces), where no framework's "
                            f"norm kernel runs; --norm-kernel applies to ranks holding whole rows (1d, 1d-sp, "
                            f"data parallel)")
    return None


@dataclass(frozen=True)
class Sum:
    """A tensor computed as sum over chunks c of a contracted dimension of ``left(c) @ right(c)``.

    ``term(ev, rows, cols, chunk)`` returns the pair (left, right) for one chunk of the block
    [rows, cols]; it fetches them in the order that lets the second be cut from what the first built.
    """

    extent: int
    term: Callable
