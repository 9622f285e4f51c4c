"""Megatron-LM's fused elementwise kernels: bias + GeLU, and bias + dropout + residual add, in numpy and torch.

Megatron-LM's linears skip their bias add (``skip_bias_add=True``) and hand the bias to one fused kernel
(``megatron/model/fused_bias_gelu.py`` and ``bias_dropout_add_fused_train`` in ``megatron/model/transformer.py``,
NVIDIA/Megatron-LM 51a2e6b0ff6f, September 2020; on by default since 9acc895632d6, January 2021):

- ``bias_gelu(x, b) = gelu(x + b)``, its backward ``dy * gelu'(x + b)``, recomputing x + b from the saved
  pre-bias input and the bias (``GeLUFunction`` saves ``input, bias``);
- ``bias_dropout_add(x, b, r) = r + dropout(x + b)``, whose backward is the dropout's, from the mask the
  forward saved (1 byte per element); the residual's gradient is the output's as it is.

Each computes exactly what the unfused composition computes, in the same order (the bias added first,
the dropout mask of ``kernels.dropout`` from the seed and the global index, the residual added last), so
a fused and an unfused schedule agree to the last bit; only the memory passes differ
(``simulator.workloads.functions``, which also holds the numpy bias-GeLU next to its GELU).
"""

from __future__ import annotations

import math

import numpy as np

from simulator.workloads.kernels import dropout as _dropout
from simulator.workloads.work import Work

__all__ = ["TORCH", "bias_dropout_add", "bias_dropout_add_work", "bias_gelu_work", "dropout_backward_work"]


def bias_dropout_add(x: np.ndarray, b: np.ndarray, r: np.ndarray, **params) -> np.ndarray:
    """r + dropout(x + b) with ``kernels.dropout``'s mask (``params``: seed, stream, p, row0, col0, width)."""
    return r + _dropout.dropout(x + b, **params)


# The passes, on an [r, c] block with a [1, c] bias: one read of each input and one write of the output,
# as one fused kernel does (the unfused chain reads and writes the [r, c] activation once per piece:
# bias add 2rc + c, GeLU 2rc; bias add 2rc + c, dropout 2rc, residual add 3rc). The FLOPs are the
# unfused pieces' (``functions._streaming``'s count), so fusing moves bytes, not arithmetic.

def bias_gelu_work(shapes, out, params) -> Work:
    """``bias_gelu``: x and b read, y written (``bias_gelu`` in fused_bias_gelu.py, 51a2e6b0ff6f)."""
    rc, c = math.prod(out), out[1]
    return Work(elements=2 * rc + c, flops=3 * rc)


def bias_gelu_backward_work(shapes, out, params) -> Work:
    """``bias_gelu_backward``: dy, x and b read, dx written; x + b and tanh recomputed (``bias_gelu_back``,
    fused_bias_gelu.py, 51a2e6b0ff6f)."""
    rc, c = math.prod(out), out[1]
    return Work(elements=3 * rc + c, flops=3 * rc)


def bias_dropout_add_work(shapes, out, params) -> Work:
    """``bias_dropout_add``: x, b and the residual read, y written, and the 1-byte keep mask written where
    p > 0 (``torch.nn.functional.dropout`` inside ``bias_dropout_add_fused_train``, transformer.py,
    51a2e6b0ff6f; with p = 0 PyTorch's dropout returns its input and keeps no mask)."""
    rc, c = math.prod(out), out[1]
    return Work(elements=3 * rc + c, mask_bytes=rc if params["p"] > 0 else 0, flops=5 * rc)


def dropout_backward_work(shapes, out, params) -> Work:
    """``dropout_backward``: dy and the saved 1-byte mask read, dx written (the fused kernel's autograd
    backward: dy * mask / (1 - p)); nothing at p = 0, where the forward's dropout returned its input and
    autograd hands dy on as it is."""
    rc = math.prod(out)
    return Work(elements=2 * rc, mask_bytes=rc, flops=rc) if params["p"] > 0 else Work()


def _torch_bias_gelu(out, x, b) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu.out(x + b, approximate="tanh", out=out)


def _torch_bias_gelu_backward(out, dy, x, b) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu_backward.grad_input(dy, x + b, approximate="tanh", grad_input=out)


def _torch_bias_dropout_add(out, x, b, r, **params) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    dropped = torch.empty_like(out)
    _dropout.dropout_torch(dropped, x + b, **params)
    torch.add(r, dropped, out=out)


TORCH = {"bias_gelu": _torch_bias_gelu, "bias_gelu_backward": _torch_bias_gelu_backward,
         "bias_dropout_add": _torch_bias_dropout_add}
"""The torch version of each kernel, by its function-table name."""
