"""The workloads tpsim plans, as data: each is a chain of layer records (``simulator.workloads.layers``).

===========  ====================  ==========================================================================
workload     sizes                 layers (tensor names; rows x columns)
===========  ====================  ==========================================================================
``gemm``     ``m``, ``k``, ``n``   Linear C = A B, A [M, K], B [K, N]
``mlp``      ``m``, ``hidden``     Linear H = X W1 (W1 [h, 4h]); Elementwise Z = gelu(H); Linear Y = Z W2
===========  ====================  ==========================================================================

Everything else is derived from the layer list: tensor shapes, the inputs and outputs of each pass,
the backward (``gemm``: dA = dC B^T, dB = A^T dC; ``mlp``: dZ = dY W2^T, dW2 = Z^T dY,
dH = dZ * gelu'(H), dX = dH W1^T, dW1 = X^T dH), and the values of any input block.

A backward-only schedule takes the forward's saved activations (every layer output but the last: H and
Z for the MLP) as inputs, in the layout the forward leaves them in. To add a workload: one entry in
``_KINDS`` (its sizes, its layer list, its label) and its CLI arguments.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from simulator.errors import InputError
from simulator.workloads.blocks import BlockEvaluator, NumpyBackend, dense_reference
from simulator.workloads.layers import Elementwise, Layer, Linear, grad
from simulator.workloads.tensors import random_block

PASSES = ("fwd", "bwd", "both")


@dataclass(frozen=True)
class _Kind:
    """One workload kind: the sizes its ``to_dict`` form stores, its layers, and its label."""

    fields: tuple[str, ...]
    layers: Callable[["Workload"], tuple[Layer, ...]]
    label: Callable[["Workload"], str]


def _gemm_layers(w: "Workload") -> tuple[Layer, ...]:
    return (Linear("A", "B", "C", w.k, w.n, "K", "N", index=0),)


def _mlp_layers(w: "Workload") -> tuple[Layer, ...]:
    h, f = w.hidden, 4 * w.hidden
    return (Linear("X", "W1", "H", h, f, "hidden", "4*hidden", index=0),
            Elementwise("gelu", "H", "Z", f),
            Linear("Z", "W2", "Y", f, h, "4*hidden", "hidden", index=1))


_KINDS = {
    "gemm": _Kind(("m", "k", "n"), _gemm_layers, lambda w: f"gemm M={w.m} K={w.k} N={w.n}"),
    "mlp": _Kind(("m", "hidden"), _mlp_layers, lambda w: f"mlp M={w.m} H={w.k}"),
}
FIELDS = {name: kind.fields for name, kind in _KINDS.items()}
"""The sizes each workload's ``to_dict`` form stores."""


@dataclass(frozen=True)
class Workload:
    """A workload and its sizes: ``gemm`` uses m, k, n; ``mlp`` uses m and hidden (k = n = hidden)."""

    name: str
    m: int
    k: int
    n: int

    def __post_init__(self) -> None:
        if self.name not in _KINDS:
            raise InputError(f"unknown workload {self.name!r}; valid: {', '.join(_KINDS)}")
        for label, value in (("M", self.m), ("K", self.k), ("N", self.n)):
            if value < 1:
                raise InputError(f"workload size {label} must be >= 1, got {value}")
        if self.name == "mlp" and self.k != self.n:
            raise InputError(f"mlp has one hidden size: k = n = hidden, got k={self.k}, n={self.n}")

    @classmethod
    def gemm(cls, m: int, k: int, n: int) -> "Workload":
        return cls("gemm", m, k, n)

    @classmethod
    def mlp(cls, m: int, hidden: int) -> "Workload":
        return cls("mlp", m, hidden, hidden)

    @classmethod
    def from_dict(cls, data: dict) -> "Workload":
        """Inverse of ``to_dict``; ValueError naming a missing, unknown or non-integer field."""
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or name not in FIELDS:
            valid = "; ".join(f"{n} ({', '.join(fields)})" for n, fields in FIELDS.items())
            raise InputError(f"workload {data!r}: expected a name and sizes, one of {valid}")
        fields = FIELDS[name]
        missing = [f for f in fields if f not in data]
        if missing:
            raise InputError(f"workload {name} needs {', '.join(fields)}; missing: {', '.join(missing)}")
        unknown = sorted(set(data) - set(fields) - {"name"})
        if unknown:
            raise InputError(f"workload {name} has no field {unknown[0]!r}; fields: {', '.join(fields)}")
        for f in fields:
            if not isinstance(data[f], numbers.Integral) or isinstance(data[f], bool):  # numpy ints are sizes too
                raise InputError(f"workload {name} field {f!r} must be an integer, got {data[f]!r}")
        if name == "mlp":
            return cls.mlp(int(data["m"]), int(data["hidden"]))
        return cls(name, int(data["m"]), int(data["k"]), int(data["n"]))

    def to_dict(self) -> dict:
        """The form stored in a Schedule's ``workload`` field."""
        if self.name == "mlp":
            return {"name": "mlp", "m": self.m, "hidden": self.k}
        return {"name": "gemm", "m": self.m, "k": self.k, "n": self.n}

    @property
    def hidden(self) -> int:
        return self.k

    def label(self) -> str:
        """``gemm M=16 K=8 N=4`` or ``mlp M=16 H=8``: the workload as its command-line sizes."""
        return _KINDS[self.name].label(self)

    def layers(self) -> tuple[Layer, ...]:
        """The chain of layer records, first to last."""
        return _KINDS[self.name].layers(self)

    def linears(self) -> tuple[Linear, ...]:
        """The linear layers, in order."""
        return tuple(layer for layer in self.layers() if isinstance(layer, Linear))

    def weights(self) -> dict[str, tuple[int, int]]:
        """Every weight tensor of the layers, in order, with its shape."""
        return {name: shape for layer in self.layers() for name, shape in layer.weights.items()}

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Global shape of every tensor the workload names: inputs, weights, activations, then gradients."""
        layers, m = self.layers(), self.m
        weights = self.weights()
        acts = {layers[0].x: (m, layers[0].in_cols), **{layer.y: (m, layer.out_cols) for layer in layers}}
        shapes = {layers[0].x: acts[layers[0].x], **weights, **acts}
        shapes[grad(layers[-1].y)] = acts[layers[-1].y]
        for layer in reversed(layers):
            shapes[grad(layer.x)] = acts[layer.x]
        shapes.update({grad(name): shape for name, shape in weights.items()})
        return shapes

    def saved_activations(self) -> tuple[str, ...]:
        """What the backward reads of the forward: every layer's output but the last."""
        return tuple(layer.y for layer in self.layers()[:-1])

    def input_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` starts from."""
        _check_pass(passes)
        layers = self.layers()
        start = (layers[0].x, *self.weights())
        d_out = grad(layers[-1].y)
        return {"fwd": start, "bwd": (*start, *self.saved_activations(), d_out), "both": (*start, d_out)}[passes]

    def output_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` produces."""
        _check_pass(passes)
        layers = self.layers()
        fwd = (layers[-1].y,)
        bwd = (grad(layers[0].x), *(grad(name) for name in self.weights()))
        return {"fwd": fwd, "bwd": bwd, "both": fwd + bwd}[passes]

    def input_block(self, seed: int, name: str, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        """Block of an input tensor from the seed alone; a saved activation from row and column panels."""
        if name in self.saved_activations():
            return BlockEvaluator(self, NumpyBackend(self, seed)).activation(name, tuple(rows), tuple(cols))
        return random_block(seed, name, self.shapes()[name], rows, cols)

    def reference(self, seed: int, passes: str) -> dict[str, np.ndarray]:
        """Every output of ``passes`` computed densely in float64 (cached per seed)."""
        return {name: dense_reference(self, seed)[name] for name in self.output_names(passes)}


def _check_pass(passes: str) -> None:
    if passes not in PASSES:
        raise InputError(f"unknown pass {passes!r}; valid: {', '.join(PASSES)}")
