"""The dense float64 reference of a pipelined step: each micro-batch through L blocks and back, gradients summed.

Inputs, each a seeded tensor (``simulator.workloads.tensors``, named as the lowered schedule names them,
scaled as the block's own inputs are): ``X.m<i>`` and ``dY.m<i>`` per micro-batch, ``<W>.l<l>`` per layer.
Outputs: ``Y.m<i>`` (micro-batch i after the last block), ``dX.m<i>`` (the gradient at the first block's
input) and ``d<W>.l<l>`` (layer l's weight gradient, summed over the micro-batches), each block's
forward and backward computed whole by ``simulator.workloads.graph.run_chunk``, the rules the
one-block proofs use.
"""

from __future__ import annotations

import numpy as np

from simulator.workloads.graph import Context, numpy_call, run_chunk
from simulator.workloads.layers import grad
from simulator.workloads.tensors import random_block
from simulator.workloads.workload import Workload

__all__ = ["pipeline_input_block", "pipeline_inputs", "pipeline_reference"]


def _seeded(workload: Workload, seed: int, tensor: str, base: str) -> np.ndarray:
    rows, cols = workload.shapes()[base]
    return pipeline_input_block(workload, seed, tensor, (0, rows), (0, cols))


def pipeline_inputs(workload: Workload, layers: int, micro_batches: int, seed: int) -> dict[str, np.ndarray]:
    """Every input tensor of the step, whole, by its schedule name."""
    x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
    out = {}
    for mb in range(micro_batches):
        out[f"{x}.m{mb}"] = _seeded(workload, seed, f"{x}.m{mb}", x)
        out[f"{grad(y)}.m{mb}"] = _seeded(workload, seed, f"{grad(y)}.m{mb}", grad(y))
    for layer in range(layers):
        for name in workload.weights():
            out[f"{name}.l{layer}"] = _seeded(workload, seed, f"{name}.l{layer}", name)
    return out


def pipeline_reference(workload: Workload, layers: int, micro_batches: int, seed: int,
                       inputs: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Every output tensor of the step, whole, in float64 (module docstring)."""
    inputs = pipeline_inputs(workload, layers, micro_batches, seed) if inputs is None else inputs
    x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
    ctx = Context(numpy_call(seed), 0)
    weights = [{name: inputs[f"{name}.l{layer}"] for name in workload.weights()} for layer in range(layers)]
    out: dict[str, np.ndarray] = {f"{grad(name)}.l{layer}": 0.0 for layer in range(layers) for name in workload.weights()}
    for mb in range(micro_batches):
        acts = [inputs[f"{x}.m{mb}"]]
        for layer in range(layers):
            acts.append(run_chunk(workload, ctx, {x: acts[-1], **weights[layer]}, backward=False)[y])
        out[f"{y}.m{mb}"] = acts[-1]
        d_out = inputs[f"{grad(y)}.m{mb}"]
        for layer in reversed(range(layers)):
            values = run_chunk(workload, ctx, {x: acts[layer], grad(y): d_out, **weights[layer]}, backward=True)
            for name in workload.weights():
                out[f"{grad(name)}.l{layer}"] = out[f"{grad(name)}.l{layer}"] + values[grad(name)]
            d_out = values[grad(x)]
        out[f"{grad(x)}.m{mb}"] = d_out
    return out


def pipeline_input_block(workload: Workload, seed: int, tensor: str, rows: tuple[int, int],
                         cols: tuple[int, int]) -> np.ndarray:
    """Block [rows, cols] of the step's input ``tensor`` (``X.m<i>``, ``dY.m<i>``, ``<W>.l<l>``), from the seed
    alone: what ``pipeline_inputs`` holds whole, for a rank that builds only its own blocks."""
    base = tensor.rpartition(".")[0]
    return workload.input_scale(base) * random_block(seed, tensor, workload.shapes()[base], rows, cols)
