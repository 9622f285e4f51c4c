"""Model FLOPs of a training step and the model FLOPs utilisation (MFU).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv
2205.05198), the model-FLOPs equation of section 6 (no recomputation counted): a GPT of L layers, hidden h, sequence
s and vocabulary V, trained on B sequences per step, does

    72 B L s h^2 (1 + s / (6h) + V / (12 h L))

FLOPs per step: 24 B s h^2 (1 + s/(6h)) per layer forward, three times that with the backward, plus the
logit layer's 6 B s h V. The 24 B s h^2 is 2 B s times a GPT layer's 12 h^2 linear weights (f = 4h); for
any other layer (grouped-query attention's smaller K and V, SwiGLU's three matrices, another f) the same
count with its own weights W: 6 B s (L (W + 2 s h) + h V). MFU = those FLOPs / (step time x GPUs x the
device's dense peak for the dtype): recomputed work and padding count as overhead, not as useful work.

Hardware FLOPs count what the GPUs compute, recomputation included (Korthikanti et al. 2022, section 6,
"hardware FLOPs utilization"): full recomputation runs every layer's forward twice, which gives Narayanan
et al. 2021's formula (arXiv 2104.04473, equation 3, the one Megatron-LM logs its TFLOP/s per GPU by with
``--recompute-activations``),

    96 B L s h^2 (1 + s / (6h) + V / (16 h L)),

and selective recomputation runs the attention core's two products again, 4 B s^2 h per layer;
torchtitan's per-op policy (``selective-op``) the products it does not keep, counted from the block's
layers (``simulator.workloads.op_checkpoint``: ``OpCheckpoint.recomputed_flops``, per layer and sequence
here).

Example (GPT-3 175B, B = 1536)::

    >>> f"{model_flops_per_step(1536, 96, 2048, 12288, 50257):.4e}"
    '3.3860e+18'
    >>> f"{hardware_flops_per_step(1536, 96, 2048, 12288, 50257, 'full'):.4e}"
    '4.5108e+18'
"""

from __future__ import annotations

__all__ = ["model_flops_per_step", "hardware_flops_per_step", "mfu"]


def model_flops_per_step(global_batch: int, layers: int, seq: int, hidden: int, vocab: int,
                         layer_weights: int | None = None) -> float:
    """72 B L s h^2 (1 + s/(6h) + V/(12hL)) (module docstring), or with ``layer_weights`` (the elements of
    one layer's linear weights, 12 h^2 for a GPT of f = 4h) 6 B s (L (W + 2 s h) + h V)."""
    B, L, s, h, V = global_batch, layers, seq, hidden, vocab
    if layer_weights is None or layer_weights == 12 * h * h:
        return 72.0 * B * L * s * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * L))
    return 6.0 * B * s * (L * (layer_weights + 2.0 * s * h) + h * V)


def hardware_flops_per_step(global_batch: int, layers: int, seq: int, hidden: int, vocab: int,
                            recompute: str = "none", layer_weights: int | None = None,
                            per_op_flops: float = 0.0) -> float:
    """Model FLOPs plus what ``recompute`` ("none", "selective", "selective-op", "full") computes again (module
    docstring): full, one more forward of the layers, 2 B s L (W + 2 s h) (24 B L s h^2 (1 + s/6h) for a GPT
    of f = 4h); selective, the attention core's two products, 4 B s^2 h per layer; selective-op, B L
    ``per_op_flops`` (the per-op policy's recomputed FLOPs of one layer and one sequence)."""
    B, L, s, h = global_batch, layers, seq, hidden
    W = 12 * h * h if layer_weights is None else layer_weights
    extra = {"none": 0.0, "selective": 4.0 * B * L * s * s * h, "selective-op": B * L * per_op_flops,
             "full": 2.0 * B * s * L * (W + 2.0 * s * h)}[recompute]
    return model_flops_per_step(B, L, s, h, vocab, layer_weights) + extra


def mfu(flops: float, step_s: float, gpus: int, peak_flops: float) -> float:
    """flops / (step_s x gpus x peak_flops)."""
    return flops / (step_s * gpus * peak_flops) if step_s > 0 else 0.0
