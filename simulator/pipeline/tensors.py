"""The global tensors of a pipelined step, by name: what its schedule starts from and what it leaves.

Per micro-batch i: ``X.m<i>`` (the first block's input) and ``dY.m<i>`` (the gradient of the last
block's output) in, ``Y.m<i>`` and ``dX.m<i>`` out. Per layer l: every weight ``<W>.l<l>`` in and its
gradient summed over the micro-batches, ``d<W>.l<l>``, out. Each has its block tensor's shape.
"""

from __future__ import annotations

from simulator.errors import ScheduleError
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["check_pipeline_tensors", "pipeline_tensors"]


def pipeline_tensors(workload: Workload, layers: int, micro_batches: int) -> tuple[dict, dict]:
    """(inputs, outputs) of the step: tensor name -> (rows, cols), in the module docstring's order."""
    shapes = workload.shapes()
    x, y = workload.input_names("fwd")[0], workload.output_names("fwd")[0]
    inputs, outputs = {}, {}
    for mb in range(micro_batches):
        inputs[f"{x}.m{mb}"], inputs[f"{grad(y)}.m{mb}"] = shapes[x], shapes[grad(y)]
        outputs[f"{y}.m{mb}"], outputs[f"{grad(x)}.m{mb}"] = shapes[y], shapes[grad(x)]
    for layer in range(layers):
        for name in workload.weights():
            inputs[f"{name}.l{layer}"] = shapes[name]
            outputs[f"{grad(name)}.l{layer}"] = shapes[grad(name)]
    return inputs, outputs


def check_pipeline_tensors(schedule, workload: Workload, options: dict) -> None:
    """ScheduleError unless the schedule's tensors and blocks are exactly the step's (a hand-edited file)."""
    try:
        layers, micro_batches = int(options["layers"]), int(options["micro_batches"])
    except (KeyError, TypeError, ValueError):
        raise ScheduleError(f"pipeline options {options!r}: expected layers and micro_batches") from None
    inputs, outputs = pipeline_tensors(workload, layers, micro_batches)
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
