"""Dense values of any workload's layer list: forward and backward on whole arrays, numpy or torch.

Each layer kind computes its outputs and its gradient contributions through the ``local`` function
table (``simulator.workloads.functions``), which has a numpy and a torch version of every function, so
one walk serves the float64 reference that the interpreter compares with (numpy) and the executor's
(torch). The backward sums the contributions a tensor gets from every layer that reads it (the
transformer block's input feeds a residual and a LayerNorm), as autograd does.

Rows go by **token chunks**: every layer is row-wise except attention, which needs whole sequences, so
a chunk of whole sequences can be run through the forward and backward alone, with the weights whole
and the weight gradients summed over chunks. ``values_by_chunks`` bounds the memory of a large
reference that way; the dropout masks and attention offsets take the chunk's first row (``row0``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.layers import grad

if TYPE_CHECKING:  # the workload module imports this one
    from simulator.workloads.workload import Workload

__all__ = ["Context", "numpy_call", "run_chunk", "values_by_chunks"]


@dataclass
class Context:
    """What a layer's dense rule computes with: ``call(fn, *arrays, **params)`` and the chunk's ``row0``."""

    call: Callable[..., Any]
    row0: int = 0


def numpy_call(seed: int) -> Callable[..., Any]:
    """``call`` on numpy arrays: the table's numpy version, with the seed for the seeded functions."""
    def call(fn: str, *arrays, **params):
        function = FUNCTIONS[fn]
        return function.numpy(*arrays, **params, **({"seed": seed} if function.seeded else {}))
    return call


def run_chunk(workload: "Workload", ctx: Context, inputs: dict[str, Any], backward: bool) -> dict[str, Any]:
    """Every activation of the chunk (and, with ``backward``, every gradient) from ``inputs``: the
    chunk's rows of the chain input (and of the last output's gradient) and the whole weights."""
    layers = workload.layers()
    values = dict(inputs)
    for layer in layers:
        values.update(layer.forward(ctx, values))
    if not backward:
        return values
    last = workload.output_names("fwd")[0]
    grads: dict[str, Any] = {last: values[grad(last)]}
    for layer in reversed(layers):
        for name, contribution in layer.backward(ctx, values, grads).items():
            grads[name] = contribution if name not in grads else grads[name] + contribution
    values.update({grad(name): value for name, value in grads.items() if name != last})
    return values


def values_by_chunks(workload: "Workload", call: Callable, input_block: Callable, rows_per_chunk: int,
                     wanted: tuple[str, ...], backward: bool, zeros: Callable, concat: Callable) -> dict[str, Any]:
    """The tensors ``wanted`` (activations, activation gradients, weight gradients), whole, computed by
    chunks of ``rows_per_chunk`` rows (a multiple of the sequence length).

    ``input_block(name, rows, cols)`` gives a block of a seeded input; ``zeros(shape)`` a zero array to sum
    weight gradients into; ``concat(list)`` joins row chunks."""
    shapes = workload.shapes()
    m = workload.m
    weights = {name: input_block(name, (0, shape[0]), (0, shape[1])) for name, shape in workload.weights().items()}
    weight_grads = {grad(name) for name in weights}
    summed = {name: zeros(shapes[name]) for name in wanted if name in weight_grads}
    pieces: dict[str, list] = {name: [] for name in wanted if name not in weight_grads}
    x, dy = workload.input_names("fwd")[0], grad(workload.output_names("fwd")[0])
    for start in range(0, m, rows_per_chunk):
        rows = (start, min(m, start + rows_per_chunk))
        inputs = {**weights, x: input_block(x, rows, (0, shapes[x][1]))}
        if backward:
            inputs[dy] = input_block(dy, rows, (0, shapes[dy][1]))
        values = run_chunk(workload, Context(call, rows[0]), inputs, backward)
        for name in summed:
            summed[name] += values[name]
        for name in pieces:
            pieces[name].append(values[name])
    return {**{name: concat(parts) for name, parts in pieces.items()}, **summed}
