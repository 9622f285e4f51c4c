"""The global tensors of a pipelined step, by name: what its schedule starts from and what it leaves.

Per micro-batch i: ``X.m<i>`` (the first block's input) and ``dY.m<i>`` (the gradient of the last
block's output) in, ``Y.m<i>`` and ``dX.m<i>`` out. Per layer l: every weight ``<W>.l<l>`` in and its
gradient summed over the micro-batches, ``d<W>.l<l>``, out. Each has its block tensor's shape.

With the LM head (a vocabulary V, padded): its weight ``Whead`` [h, V] in and ``dWhead`` out, and per
micro-batch the logits ``logits.m<i>`` [b s, V] out and their gradient ``dlogits.m<i>`` in, in place of
``Y.m<i>`` and ``dY.m<i>``.
"""

from __future__ import annotations

import math

from simulator.errors import ScheduleError
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["HEAD_WEIGHT", "LOGITS", "base_name", "check_pipeline_tensors", "input_scale", "pipeline_tensors",
           "tensor_shape"]

HEAD_WEIGHT = "Whead"
"""The LM head's weight [h, V] (tied to the embedding in GPT models; the lookup is not in the IR)."""
LOGITS = "logits"
"""The LM head's output [b s, V] per micro-batch."""


def base_name(tensor: str) -> str:
    """``X`` of ``X.m3``, ``Wqkv`` of ``Wqkv.l2``, ``Whead`` of ``Whead``."""
    return tensor.rpartition(".")[0] or tensor


def tensor_shape(workload: Workload, vocab: int | None, tensor: str) -> tuple[int, int]:
    """The shape of any tensor of the step (by its schedule name)."""
    name = base_name(tensor)
    if name in (HEAD_WEIGHT, grad(HEAD_WEIGHT)):
        return (workload.hidden, vocab)
    if name in (LOGITS, grad(LOGITS)):
        return (workload.m, vocab)
    return workload.shapes()[name]


def input_scale(workload: Workload, tensor: str) -> float:
    """The factor a seeded input is scaled by: the block's (``Workload.input_scale``), 1/sqrt(h) for the head."""
    name = base_name(tensor)
    return 1.0 / math.sqrt(workload.hidden) if name == HEAD_WEIGHT else workload.input_scale(name)


def pipeline_tensors(workload: Workload, layers: int, micro_batches: int,
                     vocab: int | None = None) -> tuple[dict, dict]:
    """(inputs, outputs) of the step: tensor name -> (rows, cols), in the module docstring's order."""
    x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
    last = y if vocab is None else LOGITS
    inputs, outputs = {}, {}
    for mb in range(micro_batches):
        inputs[f"{x}.m{mb}"], inputs[f"{grad(last)}.m{mb}"] = None, None
        outputs[f"{last}.m{mb}"], outputs[f"{grad(x)}.m{mb}"] = None, None
    for layer in range(layers):
        for name in workload.weights():
            inputs[f"{name}.l{layer}"], outputs[f"{grad(name)}.l{layer}"] = None, None
    if vocab is not None:
        inputs[HEAD_WEIGHT], outputs[grad(HEAD_WEIGHT)] = None, None
    return ({name: tensor_shape(workload, vocab, name) for name in inputs},
            {name: tensor_shape(workload, vocab, name) for name in outputs})


def check_pipeline_tensors(schedule, workload: Workload, options: dict) -> None:
    """ScheduleError unless the schedule's tensors and blocks are exactly the step's (a hand-edited file)."""
    try:
        layers, micro_batches = int(options["layers"]), int(options["micro_batches"])
        vocab = None if options.get("vocab") is None else int(options["vocab"])
    except (KeyError, TypeError, ValueError):
        raise ScheduleError(f"pipeline options {options!r}: expected layers, micro_batches (and vocab)") from None
    inputs, outputs = pipeline_tensors(workload, layers, micro_batches, vocab)
    expected = {**inputs, **outputs}
    for name, shape in schedule.tensors.items():
        if tuple(shape) != expected.get(name, ()):
            raise ScheduleError(f"tensor {name} {list(shape)} is not one of the pipelined step's "
                                f"({layers} layers, {micro_batches} micro-batches of {workload.label()})")
    for role, wanted, blocks in (("input", inputs, schedule.inputs), ("output", outputs, schedule.outputs)):
        named = {block.tensor for block in blocks}
        if named != set(wanted):
            missing = sorted(set(wanted) - named) or sorted(named - set(wanted))
            raise ScheduleError(f"the pipelined step's {role} blocks disagree with its tensors at {missing[0]}")
