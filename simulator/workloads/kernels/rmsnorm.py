"""RMSNorm split over columns (Zhang and Sennrich 2019, arXiv 1910.07467; Llama's normalisation).

For a row x of the full hidden size n, y = x rstd gamma with rstd = 1/sqrt(sum(x^2)/n + eps): no mean
and no shift, unlike LayerNorm. A rank holding some columns of each row computes its columns' part of
the row's **sum of squares** (``row_sumsq``, [rows, 1]); summed over the ranks sharing the row (the
algorithm's ``all_reduce_rows``, as for LayerNorm's moments), it gives every rank the whole row's
statistic, and ``rmsnorm`` scales its own columns.

Backward, with xhat = x rstd and g = dy gamma: dx = rstd (g - xhat sum(g xhat)/n). The one row sum
spans every column: ``rmsnorm_backward_sum`` gives a block's part, the algorithm all-reduces it, and
``rmsnorm_backward`` finishes dx. dgamma = sum over rows of dy xhat (``rmsnorm_gamma_grad``), a
partial sum over a block's rows that the algorithm reduces like LayerNorm's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EPS", "row_sumsq", "rmsnorm", "rmsnorm_backward_sum", "rmsnorm_backward", "rmsnorm_gamma_grad",
           "TORCH"]

EPS = 1e-5
"""Llama 2's and Llama 3's ``norm_eps`` (their published params.json), Mistral 7B's ``rms_norm_eps`` too."""


def _rstd(sumsq, n: int, eps: float):
    return 1.0 / (sumsq / n + eps) ** 0.5


def row_sumsq(x: np.ndarray) -> np.ndarray:
    """The sum of x^2 over this block's columns, for each row: [rows, 1]."""
    return (x * x).sum(axis=1, keepdims=True)


def rmsnorm(x, sumsq, gamma, *, n: int, eps: float):
    """x rstd gamma, rstd from the whole row's ``sumsq`` over ``n`` columns."""
    return x * _rstd(sumsq, n, eps) * gamma


def rmsnorm_backward_sum(dy, x, sumsq, gamma, *, n: int, eps: float):
    """This block's part of sum(g xhat) per row, g = dy gamma: [rows, 1]."""
    return (dy * gamma * x * _rstd(sumsq, n, eps)).sum(axis=1, keepdims=True)


def rmsnorm_backward(dy, x, sumsq, gamma, grad_sum, *, n: int, eps: float):
    """dx = rstd (g - xhat sum(g xhat)/n), the row sum from the whole row's ``grad_sum``."""
    rstd = _rstd(sumsq, n, eps)
    return rstd * (dy * gamma - x * rstd * grad_sum / n)


def rmsnorm_gamma_grad(dy, x, sumsq, *, n: int, eps: float):
    """sum over this block's rows of dy xhat: [1, cols]."""
    return (dy * x * _rstd(sumsq, n, eps)).sum(axis=0, keepdims=True)


# -- torch versions: the same formulas, written into ``out`` ---------------------------------------
def _torch_row_sumsq(out, x) -> None:
    out.copy_((x * x).sum(dim=1, keepdim=True))


def _torch_rmsnorm(out, x, sumsq, gamma, *, n: int, eps: float) -> None:
    out.copy_(rmsnorm(x, sumsq, gamma, n=n, eps=eps))  # elementwise: the numpy formula runs on tensors too


def _torch_backward_sum(out, dy, x, sumsq, gamma, *, n: int, eps: float) -> None:
    out.copy_((dy * gamma * x * _rstd(sumsq, n, eps)).sum(dim=1, keepdim=True))


def _torch_backward(out, dy, x, sumsq, gamma, grad_sum, *, n: int, eps: float) -> None:
    out.copy_(rmsnorm_backward(dy, x, sumsq, gamma, grad_sum, n=n, eps=eps))


def _torch_gamma_grad(out, dy, x, sumsq, *, n: int, eps: float) -> None:
    out.copy_((dy * x * _rstd(sumsq, n, eps)).sum(dim=0, keepdim=True))


TORCH = {"row_sumsq": _torch_row_sumsq, "rmsnorm": _torch_rmsnorm, "rmsnorm_backward_sum": _torch_backward_sum,
         "rmsnorm_backward": _torch_backward, "rmsnorm_gamma_grad": _torch_gamma_grad}
"""The torch version of each kernel, by its function-table name."""
