"""The norm on whole rows as Transformer Engine's kernels and as eager PyTorch ops run it (``--norm-kernel``).

``kernels.fused_norm`` charges apex's kernels (``--norm-kernel fused``, the default): 2 passes forward,
5 backward. Two other implementations run in the validation tables; each is the fused functions'
values under new names whose work rules charge what that implementation moves (values identical, so a
schedule's numbers do not change with the kernel; only time and memory do):

- ``te``: Transformer Engine's LayerNorm / RMSNorm (what Megatron-Core, NeMo and Megatron-Bridge run).
  Its forward is apex's (x read once, y and mu / rsigma written: the ``*_fused`` and ``*_fused_stats``
  functions). Its backward is one kernel: ``ln_bwd_tuned_kernel`` in
  ``transformer_engine/common/normalization/layernorm/ln_bwd_kernels.cuh`` at NVIDIA/TransformerEngine
  d0067d0da loads dz and x once (lines 93-94), stores dx (line 140) and each CTA's dgamma / dbeta partial
  sums (lines 149-150, 194-203); ``ln_bwd_finalize_tuned_kernel`` (line 209) sums the [CTAs, cols] fp32
  partials. RMSNorm's ``rmsnorm_bwd_tuned_kernel`` (``rmsnorm/rmsnorm_bwd_kernels.cuh``, lines 121-122,
  177, 186) likewise. So dx is ``*_fused_backward`` (dy and x read, dx written) and the gamma (and beta)
  sums cost only their [1, cols] result: ``*_te_gamma_grad`` (``layernorm_fused_beta_grad`` already
  charges only its result). 3 passes backward, not 5.
- ``eager``: torchtitan's ``RMSNorm`` with ``compile = false`` (``torchtitan/models/norms.py`` at
  pytorch/torchtitan 9dec370ad: ``output = self._norm(x.float()).type_as(x); return output * self.weight``,
  ``_norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)``), each op its own kernel
  with fp32 intermediates. Forward, per element of x, with 2-byte x and weight: ``_to_copy`` 2 + 4, ``pow``
  4 + 4, ``mean`` 4, ``mul`` 4 + 4, ``_to_copy`` 4 + 2, ``mul`` by the weight 2 + 2: 36 bytes against the
  fused kernel's 4. Backward, autograd's formulas (pytorch ``tools/autograd/derivatives.yaml``:
  ``mul.Tensor`` -> ``mul_tensor_backward`` for each factor, summed to a broadcast factor's shape by the
  engine; ``_to_copy`` -> a cast back; ``rsqrt`` -> ``-0.5 * grad * result.pow(3)``; ``mean.dim`` ->
  ``mean_backward``, an expand divided by n; ``pow.Tensor_Scalar`` -> ``pow_backward``, ``grad * (2 *
  self.pow(1))``, where ``pow`` by 1 is a copy) plus the accumulation of x.float()'s two gradients:
  the weight's 6 + 2 (dy * t, summed over rows) and dx's 84 (dy * w 4, cast 6, the [rows, 1] factor's
  product and sum 12 + 4, x.float()'s product 8, mean's 4, pow's 8 + 8 + 12, the accumulation 12, the
  cast 6): 92 against the fused 10. Every op and byte here is the list torch 2.13's dispatcher runs for
  this module on CPU (``tests/simulator/test_norm_kernels.py`` counts it with a ``TorchDispatchMode``).
  Autograd keeps x.float() (4 B per element; ``pow`` and the first ``mul`` both save it), the ``type_as``
  output (2 B; the weight's ``mul`` saves it) and rsqrt's [rows, 1] fp32 result, and not x itself
  (``_to_copy`` saves nothing): ``simulator.memory.activations`` counts that. PyTorch's ``nn.LayerNorm``
  is one native kernel (``kernels.fused_norm``), so there is no eager LayerNorm.

The fp32 intermediates are counted as ``Work.fp32_elements`` (4 B each whatever the schedule's dtype);
the bf16 tensors as ``elements``. On a float32 schedule PyTorch's ``x.float()`` and ``type_as`` return
their input without a kernel; tpsim charges them anyway (torchtitan trains in bfloat16). FLOPs are the
fused functions' (the arithmetic is the same; the passes are not).
"""

from __future__ import annotations

from simulator.workloads.kernels import fused_norm
from simulator.workloads.work import Work

__all__ = ["EAGER", "KERNELS", "TE", "VARIANTS", "names"]

KERNELS = ("fused", "te", "eager")
"""``--norm-kernel``'s choices: apex / PyTorch native (default), Transformer Engine, eager PyTorch ops."""


def _te_gamma_grad(base: str):
    """Only the [1, cols] result: the dx kernel read dy and x for the partial sums (module doc)."""
    def work(shapes, out, params) -> Work:
        r, c = shapes[0]
        return Work(elements=c, flops=fused_norm.WORK[base](shapes, out, params).flops)
    return work


def _eager_stats(shapes, out, params) -> Work:
    r, c = shapes[0]
    # x.float(): x read, xf written; pow: xf read, written; mean: read, [r] written; + eps, rsqrt: [r] twice each
    return Work(elements=r * c, fp32_elements=c * r + 2 * r * c + (r * c + r) + 2 * r + 2 * r,
                flops=fused_norm.WORK["rmsnorm_fused_stats"](shapes, out, params).flops)


def _eager_forward(shapes, out, params) -> Work:
    r, c = out
    # xf * rstd: xf and [r] read, written; type_as: fp32 read, bf16 written; * weight: read with the [c] weight, written
    return Work(elements=r * c + (r * c + c) + r * c, fp32_elements=(r * c + r) + r * c + r * c,
                flops=fused_norm.WORK["rmsnorm_fused"](shapes, out, params).flops)


def _eager_backward(shapes, out, params) -> Work:
    r, c = out
    dtype = (r * c + c + r * c)  # dy * weight: dy and the [c] weight read, written
    dtype += r * c               # cast of that to fp32: read (its fp32 write below)
    dtype += r * c               # cast of dx back to x's dtype: written (its fp32 read below)
    fp32 = r * c                 # the cast's write
    fp32 += 3 * r * c + r * c + r  # g * xf for rstd's gradient: two read, one written; summed to [r, 1]
    fp32 += 7 * r                # rsqrt's backward, -0.5 * g * rstd^3, on [r, 1]: pow, mul, mul
    fp32 += r + r * c            # mean's backward: the [r, 1] gradient expanded and divided by c: written
    fp32 += 2 * r * c + 2 * r * c + 3 * r * c  # pow's backward: xf.pow(1) (a copy), * 2, * the gradient
    fp32 += (r * c + r) + r * c  # xf's gradient through the product, g * rstd: read with [r], written
    fp32 += 3 * r * c            # the two gradients of xf accumulated
    fp32 += r * c                # the final cast's read
    return Work(elements=dtype, fp32_elements=fp32,
                flops=fused_norm.WORK["rmsnorm_fused_backward"](shapes, out, params).flops)


def _eager_gamma_grad(shapes, out, params) -> Work:
    r, c = shapes[0]
    # dy * t (the saved type_as output): both read, one written; summed over rows to [c]
    return Work(elements=3 * r * c + r * c + c, flops=fused_norm.WORK["rmsnorm_fused_gamma_grad"](shapes, out, params).flops)


TE = {"layernorm_te_gamma_grad": ("layernorm_fused_gamma_grad", _te_gamma_grad("layernorm_fused_gamma_grad")),
      "rmsnorm_te_gamma_grad": ("rmsnorm_fused_gamma_grad", _te_gamma_grad("rmsnorm_fused_gamma_grad"))}
"""Transformer Engine's functions: name -> (the fused function whose values and signature it shares, work)."""
EAGER = {"rmsnorm_eager_stats": ("rmsnorm_fused_stats", _eager_stats),
         "rmsnorm_eager": ("rmsnorm_fused", _eager_forward),
         "rmsnorm_eager_backward": ("rmsnorm_fused_backward", _eager_backward),
         "rmsnorm_eager_gamma_grad": ("rmsnorm_fused_gamma_grad", _eager_gamma_grad)}
"""The eager RMSNorm's functions, likewise."""
VARIANTS = {**TE, **EAGER}
"""Every function of this module: name -> (fused function it shares values with, work)."""


def names(norm: str, kernel: str) -> dict[str, str]:
    """The function names a ``norm`` (layernorm, rmsnorm) on whole rows emits under ``kernel``, by role:
    stats, forward, backward, gamma_grad (and beta_grad for LayerNorm)."""
    out = {"stats": f"{norm}_fused_stats", "forward": f"{norm}_fused", "backward": f"{norm}_fused_backward",
           "gamma_grad": f"{norm}_fused_gamma_grad", "beta_grad": f"{norm}_fused_beta_grad"}
    if kernel == "te":
        out["gamma_grad"] = f"{norm}_te_gamma_grad"
    elif kernel == "eager":
        out.update(stats=f"{norm}_eager_stats", forward=f"{norm}_eager", backward=f"{norm}_eager_backward",
                   gamma_grad=f"{norm}_eager_gamma_grad")
    return out
