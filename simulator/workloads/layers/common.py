"""What every layer kind shares: gradient names, and the record of a summed product."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Sum", "grad", "whole_rows"]


def grad(name: str) -> str:
    """The name of the gradient of tensor ``name``: ``"dX"`` for ``"X"``."""
    return "d" + name


def whole_rows(layout, cols: int) -> bool:
    """Whether every block of ``layout`` (rank, rows, cols) holds all ``cols`` columns of its rows: where a
    norm needs no row statistic summed across ranks and runs as the frameworks' fused kernel."""
    return all(block_cols == (0, cols) for _, _, block_cols in layout)


@dataclass(frozen=True)
class Sum:
    """A tensor computed as sum over chunks c of a contracted dimension of ``left(c) @ right(c)``.

    ``term(ev, rows, cols, chunk)`` returns the pair (left, right) for one chunk of the block
    [rows, cols]; it fetches them in the order that lets the second be cut from what the first built.
    """

    extent: int
    term: Callable
