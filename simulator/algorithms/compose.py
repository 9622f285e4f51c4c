"""Lower a workload's layer list onto one algorithm: the only code that strings layers into a schedule.

The workload (``simulator.workloads``) is a chain of layer records; the algorithm
(``simulator.algorithms.base.Algorithm``) knows where each linear's input, output and weight blocks live
and how to emit its three products. Walking the chain:

- inputs: the chain's input activation and every weight, where the first (resp. each) linear reads them;
- forward, layer by layer: a ``Linear`` is the algorithm's forward; an ``Elementwise`` is a ``local`` op
  on every block of its input, wherever that lives;
- backward, last layer first: a ``Linear`` is the algorithm's backward-input then backward-weight; an
  ``Elementwise`` is its backward function, ``local`` on the same blocks;
- a backward-only schedule takes the forward's saved activations as inputs, in the forward's layout.

Each activation's layout is the one its producer leaves (an elementwise layer keeps its input's), and
its gradient has the same layout; compose checks that each linear reads its input where the previous
layer left it.
"""

from __future__ import annotations

from simulator.algorithms.base import Algorithm, Blocks, LinearNames
from simulator.gcpause import paused_gc
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Local
from simulator.ir.schedule import Schedule
from simulator.workloads.layers import Layer, Linear, grad
from simulator.workloads.workload import Workload

__all__ = ["compose"]


def compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    """The schedule of ``workload``'s ``passes`` under ``alg``."""
    with paused_gc():  # a million ops at 4,096 ranks, and no cycles among them
        return _compose(alg, workload, passes, dtype)


def _compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    alg.check(workload)
    b = ScheduleBuilder(alg.name, alg.grid_shape, workload, passes, dtype, alg.world_size, alg.groups())
    layers = workload.layers()
    lowered = {layer: LinearNames.of(layer, workload.m) for layer in layers if isinstance(layer, Linear)}
    linears = list(lowered.values())
    layout = _activation_layouts(alg, layers, lowered)

    def place(role: str, tensor: str, blocks: Blocks) -> None:
        for rank, rows, cols in blocks:
            b.block(role, rank, tensor, tensor, rows, cols)

    def elementwise(fn: str, out: str, inputs: tuple[str, ...], blocks: Blocks) -> None:
        for rank, rows, cols in blocks:
            b.buffer(rank, out, (rows[1] - rows[0], cols[1] - cols[0]))
            b.emit(rank, Local(fn=fn, out=out, inputs=inputs))

    first, last = layers[0], layers[-1]
    place("input", first.x, layout[first.x])
    for lin in linears:
        place("input", lin.w, alg.weight_blocks(lin))
    if passes in ("fwd", "both"):
        for layer in layers:
            if isinstance(layer, Linear):
                alg.forward(b, lowered[layer])
            else:
                elementwise(layer.fn, layer.y, (layer.x,), layout[layer.x])
        place("output", last.y, layout[last.y])
    if passes == "bwd":
        for name in workload.saved_activations():
            place("input", name, layout[name])
    if passes in ("bwd", "both"):
        place("input", grad(last.y), layout[last.y])
        for layer in reversed(layers):
            dy, dx = grad(layer.y), grad(layer.x)
            if isinstance(layer, Linear):
                lin = lowered[layer]
                alg.backward_input(b, lin, dy, dx)
                alg.backward_weight(b, lin, dy, grad(lin.w))
            else:
                elementwise(layer.backward_fn, dx, (dy, layer.x), layout[layer.x])
        place("output", grad(first.x), layout[first.x])
        for lin in linears:
            place("output", grad(lin.w), alg.weight_blocks(lin))
    return b.build()


def _activation_layouts(alg: Algorithm, layers: tuple[Layer, ...],
                        lowered: dict[Linear, LinearNames]) -> dict[str, Blocks]:
    """The blocks of every activation: where its producer leaves it, checked against where it is read."""
    first_linear = next(iter(lowered.values()))
    layout = {layers[0].x: alg.input_blocks(first_linear)}
    for layer in layers:
        if isinstance(layer, Linear):
            lin = lowered[layer]
            reads = alg.input_blocks(lin)
            if sorted(reads) != sorted(layout[layer.x]):
                raise AssertionError(f"{alg.name}: linear {lin.w} reads {layer.x} in another layout than "
                                     f"the layer before leaves it")
            layout[layer.y] = alg.output_blocks(lin)
        else:
            layout[layer.y] = layout[layer.x]
    return layout
