"""The elementwise functions of the IR's ``local`` op: one table with the numpy and the torch version of each.

Every consumer reads this table: ``simulator.ir.ops`` (which names a ``local`` op may use, and their
arity), the numpy interpreter and dense reference (``numpy``), and the executor and its float64
reference (``torch``). ``tests/simulator/test_functions.py`` holds the two versions of every entry to
each other, so a new function is one entry here plus its test row.

GELU is the tanh approximation, as ``torch.nn.functional.gelu(x, approximate="tanh")``:
gelu(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

The torch versions write into a given ``out`` tensor (the executor's buffers are preallocated); torch is
imported inside them, so the simulator imports this module without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["FUNCTIONS", "ElementwiseFunction", "gelu", "gelu_grad"]

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_CUBIC = 0.044715


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x**3)))


def gelu_grad(x: np.ndarray) -> np.ndarray:
    """d gelu(x) / dx for the tanh approximation."""
    t = np.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3 * _CUBIC * x * x)


def _torch_gelu(out, x) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu.out(x, approximate="tanh", out=out)


def _torch_gelu_backward(out, dy, x) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.ops.aten.gelu_backward.grad_input(dy, x, approximate="tanh", grad_input=out)


def _torch_add(out, a, b) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    torch.add(a, b, out=out)


@dataclass(frozen=True)
class ElementwiseFunction:
    """One elementwise function: its arity, what it computes, and its numpy and torch versions."""

    arity: int
    """How many same-shaped inputs it reads."""
    meaning: str
    """What it computes, in terms of ``in0``, ``in1``, ... (shown in docs and errors)."""
    numpy: Callable[..., np.ndarray | float]
    """``numpy(*inputs)``: the result (a float where it is a constant, broadcast by the caller)."""
    torch: Callable[..., None]
    """``torch(out, *inputs)``: writes the result into the tensor ``out``."""
    backward: str | None = None
    """The entry that takes (gradient of the output, input) to the gradient of the input, if any."""


FUNCTIONS: dict[str, ElementwiseFunction] = {
    "gelu": ElementwiseFunction(
        1, "out = gelu(in0), tanh approximation (as torch gelu(approximate='tanh'))",
        numpy=gelu, torch=_torch_gelu, backward="gelu_backward"),
    "gelu_backward": ElementwiseFunction(
        2, "out = in0 * gelu'(in1): the gradient through GELU, in1 the pre-activation",
        numpy=lambda dy, x: dy * gelu_grad(x), torch=_torch_gelu_backward),
    "add": ElementwiseFunction(2, "out = in0 + in1", numpy=lambda a, b: a + b, torch=_torch_add),
    "copy": ElementwiseFunction(1, "out = in0", numpy=lambda a: a, torch=lambda out, a: out.copy_(a)),
    "zero": ElementwiseFunction(0, "out = 0", numpy=lambda: 0.0, torch=lambda out: out.zero_()),
}
"""Every function a ``local`` op may name, by name."""
