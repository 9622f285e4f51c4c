"""Model states per GPU: parameters, gradients and optimizer state, by precision, optimizer and ZeRO stage.

Bytes per parameter before sharding, for a schedule of element type ``dtype`` (Rajbhandari et al. 2019,
ZeRO, arXiv 1910.02054, section 3.1, "mixed-precision training"):

==================  =========  =========  ============================================  ======
dtype               params     grads      optimizer state                               total
==================  =========  =========  ============================================  ======
bfloat16, float16   2          2          adam: fp32 master, momentum, variance (12)    16
                                          sgd: fp32 master, momentum (8)                12
float32             4          4          adam: momentum, variance (8); sgd: momentum   16 / 12
                                          (4); no master copy: the weights are fp32
float64             8          8          adam 16, sgd 8                                32 / 24
==================  =========  =========  ============================================  ======

SGD is counted as the usual mixed-precision SGD with momentum (PyTorch ``torch.optim.SGD(momentum=...)``
keeps one momentum buffer per parameter; the fp32 master copy is the mixed-precision recipe's, as for
Adam). Gradients are counted at the parameters' precision, as ZeRO does, unless the setup says otherwise
(``TrainingSetup.grad_bytes``): Megatron-LM with bf16 accumulates its main gradients in fp32 (4 B), so
its bf16 training keeps 2 + 4 + 12 = 18 B per parameter (Megatron-LM's distributed-optimizer guide).

ZeRO shards over the data-parallel group of ``dp`` ranks: stage 1 the optimizer state, 2 also the
gradients, 3 also the parameters; a sharded state takes ceil(n / dp) elements per rank, as ZeRO's
flat, padded partitions do.
"""

from __future__ import annotations

import math

from simulator.ir.schedule import DTYPE_BYTES
from simulator.memory.breakdown import Item
from simulator.memory.setup import TrainingSetup

__all__ = ["MASTER_BYTES", "bytes_per_parameter", "state_items"]

MASTER_BYTES = 4
"""fp32: the master weights and every optimizer moment of mixed-precision training."""

_MOMENTS = {"adam": 2, "sgd": 1}
"""Optimizer moments per parameter: Adam's momentum and variance; SGD's momentum."""


def bytes_per_parameter(dtype: str, optimizer: str) -> tuple[int, int, int]:
    """(param, grad, optimizer) bytes per parameter, unsharded, for ``dtype`` and ``optimizer``."""
    size = DTYPE_BYTES[dtype]
    if size < MASTER_BYTES:  # mixed precision: fp32 master copy plus fp32 moments
        return size, size, MASTER_BYTES * (1 + _MOMENTS[optimizer])
    return size, size, size * _MOMENTS[optimizer]


def _share(elements: int, dp: int, sharded: bool) -> int:
    return math.ceil(elements / dp) if sharded else elements


def state_items(groups: list[tuple[str, int]], dtype: str, setup: TrainingSetup) -> list[Item]:
    """The params, grads and optimizer items of parameter ``groups`` [(what, elements on this rank)]."""
    param, grad, opt = bytes_per_parameter(dtype, setup.optimizer)
    grad = setup.grad_bytes or grad
    total = sum(n for _, n in groups)
    names = " + ".join(what for what, n in groups if n)
    dp, z = setup.dp, setup.zero
    shard = f", ZeRO-{z} shard of dp={dp}"
    opt_what = ("fp32 master, " if param < MASTER_BYTES else "") + {
        "adam": "Adam momentum and variance", "sgd": "SGD momentum"}[setup.optimizer]
    return [Item("params", f"{names}: {total:,} x {param} B" + (shard if z >= 3 else ""),
                 param * _share(total, dp, z >= 3)),
            Item("grads", f"{total:,} x {grad} B" + (shard if z >= 2 else ""), grad * _share(total, dp, z >= 2)),
            Item("optimizer", f"{opt_what}: {total:,} x {opt} B" + (shard if z >= 1 else ""),
                 opt * _share(total, dp, z >= 1))]
