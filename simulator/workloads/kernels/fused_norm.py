"""LayerNorm and RMSNorm as the frameworks' fused kernels run them on ranks that hold whole rows.

Where a rank holds every column of its rows (1-D tensor parallelism, sequence parallelism, data
parallelism: nothing to all-reduce between the row statistics and their use), every framework runs the
norm as one kernel per direction, not as the pieces of ``kernels.layernorm`` / ``kernels.rmsnorm``
that a column-splitting algorithm needs:

- apex ``FusedLayerNormAffineFunction`` / ``FusedRMSNormAffineFunction`` (Megatron-LM's LayerNorm since
  its first release: ``mpu/transformer.py`` imports ``apex.normalization.fused_layer_norm.FusedLayerNorm``
  at NVIDIA/Megatron-LM 93ab4bea59, September 2019), ``csrc/layer_norm_cuda_kernel.cu`` at NVIDIA/apex
  6424da3b: forward ``cuApplyLayerNorm`` (``cuApplyRMSNorm``) reads x once and writes y with the row's
  mean and invvar ([rows] floats each; RMSNorm invvar only); backward ``cuComputeGradInput`` reads dy, x
  (and mean, invvar, gamma) and writes dx, and ``cuComputePartGradGammaBeta`` reads dy and x once more for
  the gamma and beta partial sums together (``cuComputeGradGammaBeta`` then sums the [parts, cols]
  partials: negligible). 1 read + 1 write forward, 3 + 2 backward: 7 passes of the [rows, cols] block
  where the split pieces take 3 + 8 (the ``row_moments``/``layernorm`` and
  ``..._backward_moments``/``..._backward``/``..._gamma_grad``/``col_sum`` rows of ``simulator.compute``).
- PyTorch's native ``layer_norm`` CUDA kernel (``aten/src/ATen/native/cuda/layer_norm_kernel.cu``; what
  llm-foundry's ``low_precision_layernorm`` runs) has the same structure: ``vectorized_layer_norm_kernel``
  writes y, mean and rstd from one read of x; the backward's dX kernel and ``GammaBetaBackwardCUDAKernel``
  each read dY and X (the file's kernels by name; not pinned to a PyTorch commit here).
- Transformer Engine's LayerNorm / RMSNorm (``transformer_engine/common/normalization/layernorm/
  ln_bwd_kernels.cuh`` at NVIDIA/TransformerEngine d0067d0da) is leaner still in the backward: one kernel
  reads dy and x once, writes dx and the dgamma/dbeta partials (3 passes, not 5). tpsim charges apex's 5
  everywhere: the Megatron-LM default, and the larger of the two.

In the IR the forward kernel is two ``local`` ops, because an op writes one buffer and the row
statistics are a tensor of their own (the backward reads them, and the memory model counts them as
apex's saved mean and invvar, TE's mu and rsigma, [rows] floats each): ``layernorm_fused_stats``
writes them (charged only that write: the kernel computes them in its one read of x) and
``layernorm_fused`` writes y (charged that read of x). Likewise the gamma and beta sums are two ops,
reduced as two vectors, charged one read of dy and x between them. The values are the split pieces'
(the same functions, the backward's two composed), so a fused and a split schedule agree to the last
bit; only the memory passes differ. The FLOPs are the split pieces' too, so fusing moves bytes, not
arithmetic (as ``kernels.fused_bias``).
"""

from __future__ import annotations

import math

from simulator.workloads.kernels import layernorm as ln
from simulator.workloads.kernels import rmsnorm as rms
from simulator.workloads.work import Work

__all__ = ["FUSED", "TORCH", "WORK", "layernorm_fused_backward", "rmsnorm_fused_backward"]


# -- values: the split pieces', the backward's two composed ------------------------------------------
def layernorm_fused_backward(dy, x, moments, gamma, *, n: int, eps: float):
    """dx of LayerNorm on whole rows: the two row sums and dx in one kernel."""
    sums = ln.layernorm_backward_moments(dy, x, moments, gamma, n=n, eps=eps)
    return ln.layernorm_backward(dy, x, moments, gamma, sums, n=n, eps=eps)


def rmsnorm_fused_backward(dy, x, sumsq, gamma, *, n: int, eps: float):
    """dx of RMSNorm on whole rows: the row sum and dx in one kernel."""
    total = rms.rmsnorm_backward_sum(dy, x, sumsq, gamma, n=n, eps=eps)
    return rms.rmsnorm_backward(dy, x, sumsq, gamma, total, n=n, eps=eps)


FUSED = {"layernorm_fused_stats": ln.row_moments, "layernorm_fused": ln.layernorm,
         "layernorm_fused_backward": layernorm_fused_backward, "layernorm_fused_gamma_grad": ln.layernorm_gamma_grad,
         "layernorm_fused_beta_grad": lambda dy: dy.sum(axis=0, keepdims=True),
         "rmsnorm_fused_stats": rms.row_sumsq, "rmsnorm_fused": rms.rmsnorm,
         "rmsnorm_fused_backward": rmsnorm_fused_backward, "rmsnorm_fused_gamma_grad": rms.rmsnorm_gamma_grad}
"""The numpy version of each fused kernel, by its function-table name."""


def _torch_layernorm_fused_backward(out, dy, x, moments, gamma, *, n: int, eps: float) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    sums = torch.empty((x.shape[0], 2), dtype=out.dtype)
    ln.TORCH["layernorm_backward_moments"](sums, dy, x, moments, gamma, n=n, eps=eps)
    ln.TORCH["layernorm_backward"](out, dy, x, moments, gamma, sums, n=n, eps=eps)


def _torch_rmsnorm_fused_backward(out, dy, x, sumsq, gamma, *, n: int, eps: float) -> None:
    import torch  # keeps torch out of the simulator: only the executor calls this

    total = torch.empty((x.shape[0], 1), dtype=out.dtype)
    rms.TORCH["rmsnorm_backward_sum"](total, dy, x, sumsq, gamma, n=n, eps=eps)
    rms.TORCH["rmsnorm_backward"](out, dy, x, sumsq, gamma, total, n=n, eps=eps)


TORCH = {"layernorm_fused_stats": ln.TORCH["row_moments"], "layernorm_fused": ln.TORCH["layernorm"],
         "layernorm_fused_backward": _torch_layernorm_fused_backward,
         "layernorm_fused_gamma_grad": ln.TORCH["layernorm_gamma_grad"],
         "layernorm_fused_beta_grad": lambda out, dy: out.copy_(dy.sum(dim=0, keepdim=True)),
         "rmsnorm_fused_stats": rms.TORCH["row_sumsq"], "rmsnorm_fused": rms.TORCH["rmsnorm"],
         "rmsnorm_fused_backward": _torch_rmsnorm_fused_backward,
         "rmsnorm_fused_gamma_grad": rms.TORCH["rmsnorm_gamma_grad"]}
"""The torch version of each fused kernel, by its function-table name."""


# -- work: what each kernel reads and writes (module doc), on an [r, c] block ---------------------------
# ``stats``: the row statistics' floats per row written or read (apex's mean and invvar, 2, for LayerNorm;
# invvar, 1, for RMSNorm); ``vectors``: the [1, c] parameters read. FLOPs: the split pieces' (``functions``).

def _stats(stats: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = shapes[0]
        return Work(elements=stats * r, flops=flops * r * c)  # written only: computed in the forward's read of x
    return work


def _forward(vectors: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = out
        return Work(elements=2 * r * c + vectors * c, flops=flops * r * c)  # x read once, y written
    return work


def _backward(stats: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = out
        return Work(elements=3 * r * c + c + stats * r, flops=flops * r * c)  # dy, x, stats, gamma read, dx written
    return work


def _gamma_grad(stats: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = shapes[0]
        return Work(elements=2 * r * c + stats * r + c, flops=flops * r * c)  # dy, x read once more
    return work


def _beta_grad(shapes, out, params) -> Work:
    """Only the [1, c] result: apex's ``cuComputePartGradGammaBeta`` sums dy for beta in the read of dy it
    makes for gamma (charged to ``layernorm_fused_gamma_grad``)."""
    return Work(elements=math.prod(out), flops=math.prod(shapes[0]))


WORK = {"layernorm_fused_stats": _stats(2, 3), "layernorm_fused": _forward(2, 4),
        "layernorm_fused_backward": _backward(2, 13), "layernorm_fused_gamma_grad": _gamma_grad(2, 4),
        "layernorm_fused_beta_grad": _beta_grad, "rmsnorm_fused_stats": _stats(1, 2), "rmsnorm_fused": _forward(1, 3),
        "rmsnorm_fused_backward": _backward(1, 9), "rmsnorm_fused_gamma_grad": _gamma_grad(1, 3)}
"""The cost of each fused kernel, by its function-table name."""
