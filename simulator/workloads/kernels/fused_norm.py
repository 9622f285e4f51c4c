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
  llm-foundry's ``low_precision_layernorm`` runs) has the same structure: one forward kernel writing y,
  mean, rstd; a dx kernel and a gamma/beta kernel, each reading dy and x.
- Transformer Engine's LayerNorm / RMSNorm (``transformer_engine/common/normalization/layernorm/
  ln_bwd_kernels.cuh`` at NVIDIA/TransformerEngine d0067d0da) is leaner still in the backward: one kernel
  reads dy and x once, writes dx and the dgamma/dbeta partials (3 passes, not 5). tpsim charges apex's 5
  everywhere: the Megatron-LM default, and the larger of the two.

The values are those of the split pieces composed (the row statistics recomputed from x where the kernel
reads the saved mean and invvar: the same numbers), so a fused and a split schedule agree to rounding;
only the memory passes differ. The FLOPs are the split pieces' sums, so fusing moves bytes, not
arithmetic (as ``kernels.fused_bias``). The saved tensors are unchanged: apex keeps mean and invvar, TE
mu and rsigma, [rows] floats each, as tpsim's row statistics ([rows, 2] LayerNorm, [rows, 1] RMSNorm).
"""

from __future__ import annotations

import math

from simulator.workloads.kernels import layernorm as ln
from simulator.workloads.kernels import rmsnorm as rms
from simulator.workloads.work import Work

__all__ = ["FUSED", "TORCH", "WORK", "layernorm_fused", "layernorm_fused_backward", "layernorm_fused_gamma_grad",
           "rmsnorm_fused", "rmsnorm_fused_backward", "rmsnorm_fused_gamma_grad"]


# -- values: the split pieces composed on a whole row ------------------------------------------------
def layernorm_fused(x, gamma, beta, *, n: int, eps: float):
    """(x - mu) rstd gamma + beta, mu and rstd of the whole rows of ``x`` (``n`` columns)."""
    return ln.layernorm(x, ln.row_moments(x), gamma, beta, n=n, eps=eps)


def layernorm_fused_backward(dy, x, gamma, *, n: int, eps: float):
    """dx of LayerNorm on whole rows: the two row sums and dx in one kernel."""
    moments = ln.row_moments(x)
    sums = ln.layernorm_backward_moments(dy, x, moments, gamma, n=n, eps=eps)
    return ln.layernorm_backward(dy, x, moments, gamma, sums, n=n, eps=eps)


def layernorm_fused_gamma_grad(dy, x, *, n: int, eps: float):
    """sum over rows of dy xhat, xhat from whole rows of ``x``: [1, cols]."""
    return ln.layernorm_gamma_grad(dy, x, ln.row_moments(x), n=n, eps=eps)


def layernorm_fused_beta_grad(dy):
    """sum over rows of dy: [1, cols] (computed by the gamma kernel's same read of dy)."""
    return dy.sum(axis=0, keepdims=True)


def rmsnorm_fused(x, gamma, *, n: int, eps: float):
    """x rstd gamma, rstd of the whole rows of ``x`` (``n`` columns)."""
    return rms.rmsnorm(x, rms.row_sumsq(x), gamma, n=n, eps=eps)


def rmsnorm_fused_backward(dy, x, gamma, *, n: int, eps: float):
    """dx of RMSNorm on whole rows: the row sum and dx in one kernel."""
    sumsq = rms.row_sumsq(x)
    total = rms.rmsnorm_backward_sum(dy, x, sumsq, gamma, n=n, eps=eps)
    return rms.rmsnorm_backward(dy, x, sumsq, gamma, total, n=n, eps=eps)


def rmsnorm_fused_gamma_grad(dy, x, *, n: int, eps: float):
    """sum over rows of dy xhat, xhat from whole rows of ``x``: [1, cols]."""
    return rms.rmsnorm_gamma_grad(dy, x, rms.row_sumsq(x), n=n, eps=eps)


FUSED = {"layernorm_fused": layernorm_fused, "layernorm_fused_backward": layernorm_fused_backward,
         "layernorm_fused_gamma_grad": layernorm_fused_gamma_grad,
         "layernorm_fused_beta_grad": layernorm_fused_beta_grad, "rmsnorm_fused": rmsnorm_fused,
         "rmsnorm_fused_backward": rmsnorm_fused_backward, "rmsnorm_fused_gamma_grad": rmsnorm_fused_gamma_grad}
"""The numpy version of each fused kernel, by its function-table name."""


# -- torch versions: the numpy formulas run on tensors too (sums over an axis spelled for torch) ---------
def _moments(x):
    return _stack(x.sum(dim=1), (x * x).sum(dim=1))


def _stack(a, b):
    import torch  # keeps torch out of the simulator: only the executor calls this

    return torch.stack([a, b], dim=1)


def _torch_layernorm_fused(out, x, gamma, beta, *, n: int, eps: float) -> None:
    out.copy_(ln.layernorm(x, _moments(x), gamma, beta, n=n, eps=eps))


def _torch_layernorm_fused_backward(out, dy, x, gamma, *, n: int, eps: float) -> None:
    moments = _moments(x)
    mean, rstd = ln._stats(moments, n, eps)
    g = dy * gamma
    sums = _stack(g.sum(dim=1), (g * ((x - mean) * rstd)).sum(dim=1))
    out.copy_(ln.layernorm_backward(dy, x, moments, gamma, sums, n=n, eps=eps))


def _torch_layernorm_fused_gamma_grad(out, dy, x, *, n: int, eps: float) -> None:
    mean, rstd = ln._stats(_moments(x), n, eps)
    out.copy_((dy * (x - mean) * rstd).sum(dim=0, keepdim=True))


def _torch_rmsnorm_fused(out, x, gamma, *, n: int, eps: float) -> None:
    out.copy_(rms.rmsnorm(x, (x * x).sum(dim=1, keepdim=True), gamma, n=n, eps=eps))


def _torch_rmsnorm_fused_backward(out, dy, x, gamma, *, n: int, eps: float) -> None:
    sumsq = (x * x).sum(dim=1, keepdim=True)
    total = (dy * gamma * x * rms._rstd(sumsq, n, eps)).sum(dim=1, keepdim=True)
    out.copy_(rms.rmsnorm_backward(dy, x, sumsq, gamma, total, n=n, eps=eps))


def _torch_rmsnorm_fused_gamma_grad(out, dy, x, *, n: int, eps: float) -> None:
    sumsq = (x * x).sum(dim=1, keepdim=True)
    out.copy_((dy * x * rms._rstd(sumsq, n, eps)).sum(dim=0, keepdim=True))


TORCH = {"layernorm_fused": _torch_layernorm_fused, "layernorm_fused_backward": _torch_layernorm_fused_backward,
         "layernorm_fused_gamma_grad": _torch_layernorm_fused_gamma_grad,
         "layernorm_fused_beta_grad": lambda out, dy: out.copy_(dy.sum(dim=0, keepdim=True)),
         "rmsnorm_fused": _torch_rmsnorm_fused, "rmsnorm_fused_backward": _torch_rmsnorm_fused_backward,
         "rmsnorm_fused_gamma_grad": _torch_rmsnorm_fused_gamma_grad}
"""The torch version of each fused kernel, by its function-table name."""


# -- work: what each kernel reads and writes (module doc), on an [r, c] block ---------------------------
# ``stats`` is the row statistics' floats per row that the kernel writes or reads: apex's mean and
# invvar (2) for LayerNorm, invvar (1) for RMSNorm. FLOPs: the split pieces' (``functions``' rows).

def _forward(stats: int, vectors: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = out
        return Work(elements=2 * r * c + vectors * c + stats * r, flops=flops * r * c)  # x read, y written
    return work


def _backward(stats: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = out
        return Work(elements=3 * r * c + c + stats * r, flops=flops * r * c)  # dy, x read, dx written
    return work


def _gamma_grad(stats: int, flops: int):
    def work(shapes, out, params) -> Work:
        r, c = shapes[0]
        return Work(elements=2 * r * c + stats * r + c, flops=flops * r * c)  # dy, x read once more
    return work


def _beta_grad(shapes, out, params) -> Work:
    """Only the [1, c] result: apex's ``cuComputePartGradGammaBeta`` sums dy for beta from the read of dy it
    makes for gamma (charged to ``layernorm_fused_gamma_grad``); the IR keeps two ops because the two
    gradients are reduced as two vectors."""
    return Work(elements=math.prod(out), flops=math.prod(shapes[0]))


WORK = {"layernorm_fused": _forward(2, 2, 7), "layernorm_fused_backward": _backward(2, 13),
        "layernorm_fused_gamma_grad": _gamma_grad(2, 4), "layernorm_fused_beta_grad": _beta_grad,
        "rmsnorm_fused": _forward(1, 1, 5), "rmsnorm_fused_backward": _backward(1, 9),
        "rmsnorm_fused_gamma_grad": _gamma_grad(1, 3)}
"""The cost of each fused kernel, by its function-table name."""
