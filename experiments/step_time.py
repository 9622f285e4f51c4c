"""The simulated training step of a whole model under one tensor x data parallel arrangement.

``Step`` names a training configuration (a published model, the tensor-parallel algorithm and grid, the
data-parallel degree, micro-batch and global batch, recomputation, dtype, topology); ``training_step``
times it with ``simulator.training.step.step_time`` on the flow network, the same call ``tpsim predict
--global-batch`` makes for the rows it simulates. ``Step.command`` is the ``tpsim predict`` command
restricted to this one arrangement, whose simulated row is the same step (a test holds the two equal).
Topologies come from ``experiments.block_time``'s cache, so a registered variant graph works here too.

Example::

    >>> s = Step("megatron-1.2b", "1d", 2, dp=1, micro_batch=2, global_batch=2, topology="dgx-a100")
    >>> s.command()
    'tpsim predict --gpus 2 --topology dgx-a100 --model megatron-1.2b --global-batch 2 --batch 2 \
--tp-sizes 2 --algos 1d --zero 0 --recompute full --dtype float16 --simulate-top 1 --attention unfused \
--no-async-tensor-model-parallel-allreduce --no-bias-gelu-fusion --no-bias-dropout-fusion'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from experiments.block_time import topology
from simulator.algorithms.arrangement import Arrangement
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, StepTime, step_time
from simulator.workloads.models import preset
from simulator.workloads.workload import Workload

__all__ = ["Step", "training_step"]


@dataclass(frozen=True)
class Step:
    """One training step of a published model on one arrangement."""

    model: str
    algorithm: str
    layout: int | tuple[int, int, int]
    """Tensor-parallel GPUs for 1d and 1d-sp (1: pure data parallelism), the [q, q, d] grid otherwise."""
    dp: int
    micro_batch: int
    global_batch: int
    topology: str
    recompute: str = "full"
    dtype: str = "float16"
    bucket_mb: float = 25.0
    """Gradient bucket size; a bucket larger than the model (1e9) waits for the whole backward, the
    data-parallel all-reduce then overlapping nothing."""
    attention: str = "unfused"
    """The attention kernel: the published runs these steps reproduce predate FlashAttention."""
    async_dgrad: bool = False
    """Megatron-LM's asynchronous dX all-reduce beside the dW GEMM: the published runs these steps reproduce
    (2019-21) predate it (Megatron-LM added it, on by default, in September 2021)."""
    bias_fusion: bool = False
    """Megatron-LM's fused bias-GeLU and bias-dropout-add kernels: the 2019 runs these steps reproduce predate
    both (added in September 2020, NVIDIA/Megatron-LM 51a2e6b0ff6f; on by default since January 2021)."""

    @property
    def grid(self) -> tuple[int, ...]:
        return (self.layout,) if isinstance(self.layout, int) else tuple(self.layout)

    @property
    def tp(self) -> int:
        return math.prod(self.grid)

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    def arrangement(self) -> TrainingArrangement:
        return TrainingArrangement(Arrangement(self.algorithm, self.grid), self.dp)

    def command(self) -> str:
        """The ``tpsim predict --global-batch`` command whose simulated row ``label`` is this step (a grid
        algorithm may list several grids of tp GPUs; ``--simulate-top`` covers them all)."""
        top = 1 if isinstance(self.layout, int) else 8
        return (f"tpsim predict --gpus {self.gpus} --topology {self.topology} --model {self.model} "
                f"--global-batch {self.global_batch} --batch {self.micro_batch} --tp-sizes {self.tp} "
                f"--algos {self.algorithm} --zero 0 --recompute {self.recompute} --dtype {self.dtype} "
                f"--simulate-top {top}"
                + (f" --bucket-mb {self.bucket_mb:g}" if self.bucket_mb != 25.0 else "")
                + f" --attention {self.attention}"
                + ("" if self.async_dgrad else " --no-async-tensor-model-parallel-allreduce")
                + ("" if self.bias_fusion else " --no-bias-gelu-fusion --no-bias-dropout-fusion"))

    @property
    def label(self) -> str:
        """The row's name in ``tpsim predict``: ``megatron tp=8 x dp=64``."""
        return self.arrangement().label


def training_step(step: Step) -> StepTime:
    """The simulated step (flow network, contention included) of ``step``."""
    model = preset(step.model)
    block = Workload.transformer(step.micro_batch, model.seq, model.hidden, model.heads, model.ffn, model.dropout,
                                 attention=step.attention, bias_gelu_fusion=step.bias_fusion,
                                 bias_dropout_fusion=step.bias_fusion)
    options = StepOptions(global_batch=step.global_batch, layers=model.layers, vocab=model.vocab,
                          recompute=step.recompute, dtype=step.dtype, bucket_bytes=step.bucket_mb * 1e6,
                          async_dgrad=step.async_dgrad)
    G, router = topology(step.topology)
    return step_time(G, step.arrangement(), block, options, bound=False, router=router)
