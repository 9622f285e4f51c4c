"""The layer records a workload is made of: a linear x, w -> y, and an elementwise function x -> y.

A workload is a chain of these on activations of M rows (tokens): each layer reads the previous
layer's output. Every consumer walks the same list: ``simulator.algorithms.compose`` lowers it onto an
algorithm, ``simulator.workloads.dense`` computes it densely in numpy, and ``executor.reference``
computes any block of it in float64 torch. The backward of each kind is fixed here:

- ``Linear``: y = x w; dx = dy w^T, dw = x^T dy.
- ``Elementwise``: y = f(x); dx = f_backward(dy, x) (``simulator.workloads.elementwise``).

A tensor's gradient is named ``"d" + name``. Adding a layer kind means a record here, its rule in each
of those walkers, and its tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.elementwise import FUNCTIONS

__all__ = ["Elementwise", "Layer", "Linear", "grad"]


def grad(name: str) -> str:
    """The name of the gradient of tensor ``name``: ``"dX"`` for ``"X"``."""
    return "d" + name


@dataclass(frozen=True)
class Linear:
    """y [M, n] = x [M, k] @ w [k, n], with the labels its sizes go by in messages (``K``, ``4*hidden``)."""

    x: str
    w: str
    y: str
    k: int
    n: int
    k_label: str
    n_label: str
    index: int
    """The position of this linear among the workload's linears (0 first): 1-D alternates column and row."""


@dataclass(frozen=True)
class Elementwise:
    """y = fn(x) elementwise, fn an entry of ``FUNCTIONS`` with a backward; x and y are [M, cols]."""

    fn: str
    x: str
    y: str
    cols: int

    def __post_init__(self) -> None:
        entry = FUNCTIONS.get(self.fn)
        if entry is None or entry.arity != 1 or entry.backward is None:
            usable = [name for name, f in FUNCTIONS.items() if f.arity == 1 and f.backward]
            raise ValueError(f"elementwise layer {self.fn!r}: needs a one-input function with a backward; "
                             f"valid: {', '.join(usable)}")

    @property
    def backward_fn(self) -> str:
        """The ``local`` function that takes (dy, x) to dx."""
        return FUNCTIONS[self.fn].backward


Layer = Linear | Elementwise
