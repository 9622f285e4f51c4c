"""Blocks of a workload's tensors, computed from the seed by walking its layer list: the one evaluator.

``BlockEvaluator`` answers "block [R, C] of tensor T" for any activation, gradient or weight gradient,
asking each layer for its rule (``simulator.workloads.layers``). Its array operations go through a
backend, so the same rules serve three consumers:

- the dense float64 reference in numpy (``dense_reference``, what ``interpret`` compares with);
- the saved activations a backward-only schedule starts from (``Workload.input_block``), in numpy;
- the executor's float64 reference in torch (``executor.reference``), which sums each top-level product
  over chunks of its contracted dimension to bound memory.

Within one block, a sub-block whose ranges do not involve the current chunk (a **panel**, e.g. X[R, :]
for the MLP's Y[R, C]) is computed once and kept; a sub-block of a chunk is kept for that chunk only,
and an input block a chunk needs twice (the MLP's W1[C, F] inside W1[:, F]) is cut from the one already
built, so every input element is generated once per block.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.layers.common import grad
from simulator.workloads.tensors import random_block

if TYPE_CHECKING:  # the workload module imports this one
    from simulator.workloads.workload import Workload

__all__ = ["BlockEvaluator", "Chunk", "NumpyBackend", "ShapeBackend", "chunks", "dense_reference"]


class Chunk(tuple):
    """A range that one chunk of a top-level sum covers: what tells a chunk's arrays from the panels."""


def chunks(extent: int, width: int) -> Iterator[tuple[int, int]]:
    """Consecutive ranges of at most ``width`` covering 0 .. extent."""
    for start in range(0, extent, width):
        yield start, min(start + width, extent)


class NumpyBackend:
    """float64 numpy arrays; inputs from the seed."""

    def __init__(self, workload: "Workload", seed: int):
        self.workload, self.seed = workload, seed
        self.shapes = workload.shapes()

    def input(self, name: str, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        return random_block(self.seed, name, self.shapes[name], rows, cols)

    def zeros(self, rows: int, cols: int) -> np.ndarray:
        return np.zeros((rows, cols))

    def function(self, fn: str, rows: int, cols: int, inputs: tuple) -> np.ndarray:
        value = FUNCTIONS[fn].numpy(*inputs)
        return value if np.shape(value) == (rows, cols) else np.full((rows, cols), value)

    @staticmethod
    def addmm(acc: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        acc += left @ right


class _Shape:
    """An array of which only the shape is known: what a dry run computes with."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, int]):
        self.shape = shape

    def __matmul__(self, other: "_Shape") -> "_Shape":
        return _Shape((self.shape[0], other.shape[1]))

    @property
    def T(self) -> "_Shape":
        return _Shape((self.shape[1], self.shape[0]))

    def __getitem__(self, key: tuple[slice, slice]) -> "_Shape":
        return _Shape(tuple(len(range(*part.indices(extent))) for part, extent in zip(key, self.shape)))

    def __setitem__(self, key, value) -> None:
        pass


class ShapeBackend:
    """Shapes only: the dry run that measures a block's panels and chunk-sized arrays before any work."""

    @staticmethod
    def input(name: str, rows: tuple[int, int], cols: tuple[int, int]) -> _Shape:
        return _Shape((rows[1] - rows[0], cols[1] - cols[0]))

    @staticmethod
    def zeros(rows: int, cols: int) -> _Shape:
        return _Shape((rows, cols))

    @staticmethod
    def function(fn: str, rows: int, cols: int, inputs: tuple) -> _Shape:
        return _Shape((rows, cols))

    @staticmethod
    def addmm(acc: _Shape, left: _Shape, right: _Shape) -> None:
        pass


class BlockEvaluator:
    """Blocks of ``workload``'s tensors on ``backend``; one evaluator per block asked for (its panel cache)."""

    def __init__(self, workload: "Workload", backend: Any):
        self.workload, self.backend = workload, backend
        self.layers = workload.layers()
        self.producer = {layer.y: layer for layer in self.layers}
        self.consumer = {layer.x: layer for layer in self.layers}
        self.panels: dict[tuple, Any] = {}
        self.chunk_inputs: dict[str, list[tuple[tuple[int, int], tuple[int, int], Any]]] = {}
        self.widest = 1
        """The most elements of any array a chunk made (with chunks one wide: elements per unit of width)."""

    # -- what layers call --------------------------------------------------------------------------
    def input(self, name: str, rows: tuple[int, int], cols: tuple[int, int]):
        """A block of seeded input ``name``; a chunk's block cut from a larger one of the same chunk."""
        varies = _varies(rows, cols)
        if varies:
            for r, c, value in self.chunk_inputs.get(name, ()):
                if r[0] <= rows[0] and rows[1] <= r[1] and c[0] <= cols[0] and cols[1] <= c[1]:
                    return value[rows[0] - r[0]:rows[1] - r[0], cols[0] - c[0]:cols[1] - c[0]]
        value = self._memo(("input", name, rows, cols), varies, lambda: self.backend.input(name, rows, cols))
        if varies:
            self.chunk_inputs.setdefault(name, []).append((rows, cols, value))
        return value

    def activation(self, name: str, rows: tuple[int, int], cols: tuple[int, int]):
        """Block of forward activation ``name`` (the chain's input is a seeded input)."""
        layer = self.producer.get(name)
        if layer is None:
            return self.input(name, rows, cols)
        return self._memo(("act", name, rows, cols), _varies(rows, cols), lambda: layer.output_block(self, rows, cols))

    def gradient(self, name: str, rows: tuple[int, int], cols: tuple[int, int]):
        """Block of the gradient of activation ``name`` (the last output's is a seeded input)."""
        layer = self.consumer.get(name)
        if layer is None:
            return self.input(grad(name), rows, cols)
        return self._memo(("grad", name, rows, cols), _varies(rows, cols),
                          lambda: layer.input_grad_block(self, rows, cols))

    def function(self, fn: str, rows: tuple[int, int], cols: tuple[int, int], *inputs):
        """``fn`` of same-shaped blocks, as a new block."""
        return self._made(self.backend.function(fn, rows[1] - rows[0], cols[1] - cols[0], inputs),
                          _varies(rows, cols))

    # -- what consumers call -----------------------------------------------------------------------
    def block(self, tensor: str, rows: tuple[int, int], cols: tuple[int, int], width: int | None = None,
              first_chunk_only: bool = False):
        """Block [rows, cols] of ``tensor``: a summed product by chunks of ``width`` of its contracted
        dimension, anything else by chunks of ``width`` rows (None: one chunk)."""
        rows, cols = tuple(rows), tuple(cols)
        nr, nc = rows[1] - rows[0], cols[1] - cols[0]
        sums = self._sums()
        if tensor in sums:
            term = sums[tensor]
            acc = self.backend.zeros(nr, nc)
            for start, stop in chunks(term.extent, width or term.extent):
                self.chunk_inputs = {}
                self.backend.addmm(acc, *term.term(self, rows, cols, Chunk((start, stop))))
                if first_chunk_only:
                    break
            return acc
        value = self._rule(tensor)
        out = None
        for a, b in chunks(nr, width or nr):
            self.chunk_inputs = {}
            part = value(Chunk((rows[0] + a, rows[0] + b)), cols)
            if out is None and (a, b) == (0, nr):
                return part
            if out is None:
                out = self.backend.zeros(nr, nc)
            out[a:b] = part
            if first_chunk_only:
                break
        return out

    def _sums(self) -> dict:
        sums: dict = {}
        for layer in self.layers:
            sums.update(layer.sums(self.workload.m))
        return sums

    def _rule(self, tensor: str) -> Callable:
        """The function of (rows, cols) that computes a block of ``tensor``; ValueError if it has none."""
        if tensor in self.producer:
            return lambda rows, cols: self.activation(tensor, rows, cols)
        for layer in self.layers:
            if grad(layer.x) == tensor:
                return lambda rows, cols: self.gradient(layer.x, rows, cols)
        computable = {*self.producer, *(grad(layer.x) for layer in self.layers), *self._sums()}
        valid = [name for name in self.workload.shapes() if name in computable]
        raise ValueError(f"no reference for output tensor {tensor!r} of workload {self.workload.name}; "
                         f"valid: {', '.join(valid)}")

    # -- caches ------------------------------------------------------------------------------------
    def _made(self, value, varies: bool):
        if varies:
            self.widest = max(self.widest, math.prod(value.shape))
        return value

    def _memo(self, key: tuple, varies: bool, make: Callable):
        if varies:
            return self._made(make(), True)
        if key not in self.panels:
            self.panels[key] = make()
        return self.panels[key]


def _varies(rows: tuple[int, int], cols: tuple[int, int]) -> bool:
    return isinstance(rows, Chunk) or isinstance(cols, Chunk)


@lru_cache(maxsize=8)
def dense_reference(workload: "Workload", seed: int) -> dict[str, np.ndarray]:
    """Every output of ``workload`` (both passes) under ``seed``, whole, in numpy float64."""
    out = {}
    for name in workload.output_names("both"):
        rows, cols = workload.shapes()[name]
        out[name] = BlockEvaluator(workload, NumpyBackend(workload, seed)).block(name, (0, rows), (0, cols))
    return out
