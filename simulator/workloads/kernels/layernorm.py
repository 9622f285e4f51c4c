"""LayerNorm split over columns: per-block kernels whose row sums an algorithm all-reduces in between.

For a row x of the full hidden size n, y = (x - mu) rstd gamma + beta with mu = sum(x)/n,
rstd = 1/sqrt(sum(x^2)/n - mu^2 + eps). A rank holding only some columns of each row computes the two
**moments** [sum x, sum x^2] of its columns (``row_moments``); summed over the ranks that share the row
(one all-reduce of [rows, 2], the Optimus / Tesseract row-group reduction), they give every rank the
statistics of the whole row, and ``layernorm`` normalises its own columns. Colossal-AI's 2-D and 2.5-D
LayerNorm all-reduce E[x] and E[x^2] separately; one [rows, 2] all-reduce moves the same bytes with
one latency fewer.

Backward, with xhat = (x - mu) rstd and g = dy gamma: dx = rstd (g - sum(g)/n - xhat sum(g xhat)/n).
The two row sums again span every column: ``layernorm_backward_moments`` gives a block's part of
[sum g, sum g xhat], the algorithm all-reduces them over the row's ranks, and ``layernorm_backward``
finishes dx. dgamma = sum over rows of dy xhat (``layernorm_gamma_grad``), dbeta = sum over rows of dy
(``col_sum``): partial sums over a block's rows, which the algorithm reduces over the ranks holding
other rows of the same columns.
"""

from __future__ import annotations

import numpy as np

__all__ = ["row_moments", "layernorm", "layernorm_backward_moments", "layernorm_backward", "layernorm_gamma_grad",
           "TORCH"]

EPS = 1e-5
"""torch.nn.LayerNorm's default epsilon (Megatron-LM's ``layernorm_epsilon`` default too)."""


def _stats(moments, n: int, eps: float):
    mean = moments[:, 0:1] / n
    var = moments[:, 1:2] / n - mean * mean
    return mean, 1.0 / (var + eps) ** 0.5


def row_moments(x: np.ndarray) -> np.ndarray:
    """[sum over columns of x, of x^2] for each row: [rows, 2]."""
    return np.stack([x.sum(axis=1), (x * x).sum(axis=1)], axis=1)


def layernorm(x, moments, gamma, beta, *, n: int, eps: float):
    """(x - mu) rstd gamma + beta, mu and rstd from the whole row's ``moments`` over ``n`` columns."""
    mean, rstd = _stats(moments, n, eps)
    return (x - mean) * rstd * gamma + beta


def layernorm_backward_moments(dy, x, moments, gamma, *, n: int, eps: float):
    """This block's part of [sum g, sum g xhat] per row, g = dy gamma: [rows, 2]."""
    mean, rstd = _stats(moments, n, eps)
    g = dy * gamma
    xhat = (x - mean) * rstd
    return np.stack([g.sum(axis=1), (g * xhat).sum(axis=1)], axis=1)


def layernorm_backward(dy, x, moments, gamma, grad_moments, *, n: int, eps: float):
    """dx = rstd (g - sum(g)/n - xhat sum(g xhat)/n), the sums from the whole row's ``grad_moments``."""
    mean, rstd = _stats(moments, n, eps)
    xhat = (x - mean) * rstd
    return rstd * (dy * gamma - grad_moments[:, 0:1] / n - xhat * grad_moments[:, 1:2] / n)


def layernorm_gamma_grad(dy, x, moments, *, n: int, eps: float):
    """sum over this block's rows of dy xhat: [1, cols]."""
    mean, rstd = _stats(moments, n, eps)
    return (dy * (x - mean) * rstd).sum(axis=0, keepdims=True)


# -- torch versions: the same formulas, written into ``out`` ---------------------------------------
def _torch_row_moments(out, x) -> None:
    out[:, 0] = x.sum(dim=1)
    out[:, 1] = (x * x).sum(dim=1)


def _torch_layernorm(out, x, moments, gamma, beta, *, n: int, eps: float) -> None:
    out.copy_(layernorm(x, moments, gamma, beta, n=n, eps=eps))  # the numpy formula runs on tensors too


def _torch_backward_moments(out, dy, x, moments, gamma, *, n: int, eps: float) -> None:
    mean, rstd = _stats(moments, n, eps)
    g = dy * gamma
    out[:, 0] = g.sum(dim=1)
    out[:, 1] = (g * ((x - mean) * rstd)).sum(dim=1)


def _torch_backward(out, dy, x, moments, gamma, grad_moments, *, n: int, eps: float) -> None:
    out.copy_(layernorm_backward(dy, x, moments, gamma, grad_moments, n=n, eps=eps))


def _torch_gamma_grad(out, dy, x, moments, *, n: int, eps: float) -> None:
    mean, rstd = _stats(moments, n, eps)
    out.copy_((dy * (x - mean) * rstd).sum(dim=0, keepdim=True))


TORCH = {"row_moments": _torch_row_moments, "layernorm": _torch_layernorm,
         "layernorm_backward_moments": _torch_backward_moments, "layernorm_backward": _torch_backward,
         "layernorm_gamma_grad": _torch_gamma_grad}
"""The torch version of each kernel, by its function-table name."""
