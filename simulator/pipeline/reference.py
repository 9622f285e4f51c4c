"""The dense float64 reference of a pipelined step: each micro-batch through L blocks and back, gradients summed.

Inputs, each a seeded tensor (``simulator.workloads.tensors``, named as the lowered schedule names them,
``simulator.pipeline.tensors``, scaled as the block's own inputs are): ``X.m<i>`` and ``dY.m<i>`` per
micro-batch, ``<W>.l<l>`` per layer. Outputs: ``Y.m<i>`` (micro-batch i after the last block), ``dX.m<i>``
(the gradient at the first block's input) and ``d<W>.l<l>`` (layer l's weight gradient, summed over the
micro-batches), each block's forward and backward computed whole by
``simulator.workloads.graph.run_chunk``, the rules the one-block proofs use. With the LM head,
``logits.m<i>`` = Y Whead replaces ``Y.m<i>``, the last block's output gradient is dlogits Whead^T, and
``dWhead`` = sum over micro-batches of Y^T dlogits.
"""

from __future__ import annotations

import numpy as np

from simulator.pipeline.tensors import HEAD_WEIGHT, LOGITS, input_scale, pipeline_tensors, tensor_shape
from simulator.workloads.graph import Context, numpy_call, run_chunk
from simulator.workloads.layers import grad
from simulator.workloads.tensors import random_block
from simulator.workloads.workload import Workload

__all__ = ["pipeline_input_block", "pipeline_inputs", "pipeline_reference"]


def pipeline_input_block(workload: Workload, seed: int, tensor: str, rows: tuple[int, int], cols: tuple[int, int],
                         vocab: int | None = None) -> np.ndarray:
    """Block [rows, cols] of the step's input ``tensor`` (``X.m<i>``, ``dY.m<i>``, ``<W>.l<l>``, ...), from the
    seed alone: what ``pipeline_inputs`` holds whole, for a rank that builds only its own blocks."""
    shape = tensor_shape(workload, vocab, tensor)
    return input_scale(workload, tensor) * random_block(seed, tensor, shape, rows, cols)


def pipeline_inputs(workload: Workload, layers: int, micro_batches: int, seed: int,
                    vocab: int | None = None) -> dict[str, np.ndarray]:
    """Every input tensor of the step, whole, by its schedule name."""
    inputs, _ = pipeline_tensors(workload, layers, micro_batches, vocab)
    return {name: pipeline_input_block(workload, seed, name, (0, rows), (0, cols), vocab)
            for name, (rows, cols) in inputs.items()}


def pipeline_reference(workload: Workload, layers: int, micro_batches: int, seed: int,
                       inputs: dict[str, np.ndarray] | None = None, vocab: int | None = None) -> dict[str, np.ndarray]:
    """Every output tensor of the step, whole, in float64 (module docstring)."""
    inputs = pipeline_inputs(workload, layers, micro_batches, seed, vocab) if inputs is None else inputs
    x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
    ctx = Context(numpy_call(seed), 0)
    weights = [{name: inputs[f"{name}.l{layer}"] for name in workload.weights()} for layer in range(layers)]
    out: dict[str, np.ndarray] = {f"{grad(name)}.l{layer}": 0.0
                                  for layer in range(layers) for name in workload.weights()}
    if vocab is not None:
        head, out[grad(HEAD_WEIGHT)] = inputs[HEAD_WEIGHT], 0.0
    for mb in range(micro_batches):
        acts = [inputs[f"{x}.m{mb}"]]
        for layer in range(layers):
            acts.append(run_chunk(workload, ctx, {x: acts[-1], **weights[layer]}, backward=False)[y])
        if vocab is None:
            out[f"{y}.m{mb}"], d_out = acts[-1], inputs[f"{grad(y)}.m{mb}"]
        else:
            d_logits = inputs[f"{grad(LOGITS)}.m{mb}"]
            out[f"{LOGITS}.m{mb}"], d_out = acts[-1] @ head, d_logits @ head.T
            out[grad(HEAD_WEIGHT)] = out[grad(HEAD_WEIGHT)] + acts[-1].T @ d_logits
        for layer in reversed(range(layers)):
            values = run_chunk(workload, ctx, {x: acts[layer], grad(y): d_out, **weights[layer]}, backward=True)
            for name in workload.weights():
                out[f"{grad(name)}.l{layer}"] = out[f"{grad(name)}.l{layer}"] + values[grad(name)]
            d_out = values[grad(x)]
        out[f"{grad(x)}.m{mb}"] = d_out
    return out
