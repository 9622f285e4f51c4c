"""The dense float64 reference of a workload in numpy: its layer list walked forward, then backward.

``interpret`` compares every output block of a schedule with these matrices. Inputs come from the seed
(``simulator.workloads.tensors``), so they are the very values every schedule starts from.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from simulator.workloads.elementwise import FUNCTIONS
from simulator.workloads.layers import Linear, grad
from simulator.workloads.tensors import random_block

if TYPE_CHECKING:  # the workload module imports this one
    from simulator.workloads.workload import Workload

__all__ = ["dense_reference"]


@lru_cache(maxsize=8)
def dense_reference(workload: "Workload", seed: int) -> dict[str, np.ndarray]:
    """Every activation and gradient of ``workload`` under ``seed``, by name, computed densely."""
    shapes = workload.shapes()
    layers = workload.layers()

    def seeded(name: str) -> np.ndarray:
        rows, cols = shapes[name]
        return random_block(seed, name, shapes[name], (0, rows), (0, cols))

    values = {layers[0].x: seeded(layers[0].x)}
    for layer in layers:
        x = values[layer.x]
        if isinstance(layer, Linear):
            values[layer.w] = seeded(layer.w)
            values[layer.y] = x @ values[layer.w]
        else:
            values[layer.y] = FUNCTIONS[layer.fn].numpy(x)
    d_out = grad(layers[-1].y)
    values[d_out] = seeded(d_out)
    for layer in reversed(layers):
        dy = values[grad(layer.y)]
        if isinstance(layer, Linear):
            values[grad(layer.x)] = dy @ values[layer.w].T
            values[grad(layer.w)] = values[layer.x].T @ dy
        else:
            values[grad(layer.x)] = FUNCTIONS[layer.backward_fn].numpy(dy, values[layer.x])
    return values
