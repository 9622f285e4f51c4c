"""A step's FLOPs and utilisation as Megatron-LM reports them: model FLOPs, MFU, HFU and TFLOP/s per GPU.

The FLOP counts are ``simulator.training.flops``' (Korthikanti et al. 2022's model FLOPs; Narayanan et al.
2021's with recomputation counted), over the step's time and GPUs and the peak of the rate the GEMMs use
(the dtype's dense peak, or FP8's under ``--dtype fp8``).
"""

from __future__ import annotations

from simulator.compute import FP8, ComputeConfig, ComputeModel
from simulator.training.flops import hardware_flops_per_step, mfu, model_flops_per_step
from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload

__all__ = ["utilisation"]


def utilisation(block: Workload, options, device: dict, config: ComputeConfig, step_s: float,
                gpus: int) -> tuple[float, float, float, float]:
    """(model FLOPs per step, MFU, HFU, hardware TFLOP/s per GPU) of a step of ``step_s`` on ``gpus`` GPUs,
    as Megatron-LM reports them (``simulator.training.flops``), against the peak of the rate the GEMMs use."""
    L = options.layers
    weights = sum(linear.k * linear.n for linear in block.linears())
    flops = model_flops_per_step(options.global_batch, L, block.seq, block.hidden, options.vocab or 0, weights)
    # Selective recompute under FlashAttention recomputes nothing more than flash's own backward does.
    recomputed = "none" if options.recompute == "selective" and block.attention != "unfused" else options.recompute
    per_op = op_checkpoint(block).recomputed_flops / block.batch if recomputed == "selective-op" else 0.0
    hardware = hardware_flops_per_step(options.global_batch, L, block.seq, block.hidden, options.vocab or 0,
                                       recomputed, weights, per_op_flops=per_op)
    peak = ComputeModel(config).peak_flops(device, FP8 if config.fp8_gemms else options.dtype)
    return flops, mfu(flops, step_s, gpus, peak), mfu(hardware, step_s, gpus, peak), hardware / (step_s * gpus) / 1e12

