"""torchtitan's rotary embedding, GQA key/value copies and SwiGLU product as eager PyTorch ops (``--pointwise-kernel``).

tpsim's ``rotary`` and ``swiglu`` (``llama_rules``) are one pass each: the block read once and written once,
what a fused kernel (torch.compile's, Megatron-Core's, Liger's) moves. torchtitan with ``compile = false``
(its llama3 8B toml at pytorch/torchtitan 9dec370ad, the commit of its H100 benchmark) runs its model code
op by op; ``eager`` charges those ops. The functions here are ``rotary``'s and ``swiglu``'s values under new
names whose work rules charge what the eager ops move (values identical: only time and memory change). One
flag for all three because one switch (``compile``) turns them all eager in the one framework that runs them
so, and no run mixes them.

- ``rotary_eager`` is torchtitan's attention between its linears and SDPA (``torchtitan/models/llama/model.py``
  at 9dec370ad, ``Attention.forward`` lines 189-209): ``apply_rotary_emb`` (lines 108-113:
  ``view_as_complex(xq.float().reshape(..., -1, 2))``, ``* freqs_cis``, ``view_as_real(...).flatten(3)``,
  ``.type_as(xq)``, likewise xk) and ``repeat_kv`` (lines 116-125: ``unsqueeze``, ``expand`` to ``n_rep``
  copies, ``reshape``: a materialised copy, since a reshape of an expanded tensor cannot be a view) on keys
  and values. Per element of Q and K: ``_to_copy`` 2 + 4, the complex ``mul`` 4 + 4, ``_to_copy`` 4 + 2:
  20 bytes (each ``mul`` also reads the [s, d/2] complex64 ``freqs_cis``: s d fp32 elements). V is not
  touched but by ``repeat_kv`` (tpsim's one pass reads and writes it: its IR carries V in the rotated block).
  ``repeat_kv`` reads each key and value element once and writes it ``group`` times (none at group 1,
  where it returns its input). The transposes around SDPA are views, and the ``.transpose(1, 2)
  .contiguous()`` on its output copies nothing on the flash path: PyTorch's CUDA flash SDPA returns its
  [b, s, h, d] result transposed (``_scaled_dot_product_flash_attention_cuda`` in
  ``aten/src/ATen/native/transformers/cuda/attention.cu``: ``attention = output.transpose(1, 2)``), so the
  transpose back is already contiguous.
- ``rotary_eager_backward``: autograd's reverse (``tools/autograd/derivatives.yaml``): ``repeat_kv``'s
  expand backward sums the ``group`` copies (``sum``: group reads, one write per key and value element);
  ``_to_copy`` casts the gradient to fp32 (2 + 4), ``mul`` by ``freqs_cis.conj()`` (4 + 4, plus a ``clone``
  that resolves the conjugate table, s d read and written, and the table's read), the cast back (4 + 2).
- ``swiglu_eager``: ``FeedForward.forward`` (line 253, ``self.w2(F.silu(self.w1(x)) * self.w3(x))``):
  ``silu`` 2 + 2 and ``mul`` 2 + 2 + 2 per ffn element: 10 bytes against the fused 6 (gate and up read, z
  written). ``swiglu_eager_backward``: ``mul``'s two gradients (dz * up, dz * silu(gate): 6 + 6) and
  ``silu_backward`` (dsilu and gate read, dgate written: 6): 18 against the fused 10.

Every op and byte above is the list torch 2.13's dispatcher runs for that code on CPU
(``tests/simulator/test_pointwise_kernels.py`` counts it with a ``TorchDispatchMode``). Autograd keeps, beyond
what tpsim's layers save, ``silu(gate)`` (``mul`` saves both factors; ``silu`` saves gate, ``H``'s half) and
SDPA's expanded keys and values (``group`` times the key/value columns; the rotated xk before ``repeat_kv`` is
not kept, ``expand`` and ``reshape`` need only sizes); the complex ``mul`` keeps nothing large (its other
factor, ``freqs_cis``, needs no gradient). ``simulator.memory.activations`` counts that. FLOPs are the fused
functions' (the arithmetic is the same; the passes are not). The fp32 tensors are ``Work.fp32_elements``.
"""

from __future__ import annotations

from simulator.workloads import llama_rules
from simulator.workloads.work import Work

__all__ = ["KERNELS", "VARIANTS", "kept_extra", "names"]

KERNELS = ("fused", "eager")
"""``--pointwise-kernel``'s choices: one pass each (default), torchtitan's eager PyTorch ops."""


def _split(shape, params) -> tuple[int, int, int]:
    """(Q and K elements, key elements, freqs_cis fp32 elements) of a rotary block [rows, cols]."""
    rows, cols = shape
    g, d = params["group"], params["head_dim"]
    kv = rows * cols // (g + 2)  # one key (or value) head per group of g + 2 heads
    return rows * cols - kv, kv, params["seq"] * d


def _repeat(kv: int, group: int) -> int:
    """``repeat_kv`` on keys and values: each element read once, written ``group`` times (or, backward, the
    ``group`` copies read and summed into one); nothing where group is 1."""
    return 0 if group == 1 else 2 * (kv + group * kv)


def _rotary(backward: bool):
    def work(shapes, out, params) -> Work:
        qk, kv, table = _split(out, params)
        # casts: dtype read and written once each per Q/K element, fp32 written and read; the complex mul: fp32
        # read and written; its two calls (Q, K) read the table, and the backward's also clone its conjugate
        fp32 = 4 * qk + (3 if backward else 1) * 2 * table
        return Work(elements=2 * qk + _repeat(kv, params["group"]), fp32_elements=fp32,
                    flops=llama_rules.rotary_work(shapes, out, params).flops)
    return work


def _swiglu(backward: bool):
    base = llama_rules.swiglu_work(backward)

    def work(shapes, out, params) -> Work:
        f = out[0] * out[1] // (2 if backward else 1)  # ffn elements: the output z, or half the gate/up gradient
        return Work(elements=(9 if backward else 5) * f, flops=base(shapes, out, params).flops)
    return work


VARIANTS = {"rotary_eager": ("rotary", _rotary(False)), "rotary_eager_backward": ("rotary_backward", _rotary(True)),
            "swiglu_eager": ("swiglu", _swiglu(False)), "swiglu_eager_backward": ("swiglu_backward", _swiglu(True))}
"""Every function of this module: name -> (the fused function whose values and signature it shares, work)."""


def names(kind: str, kernel: str) -> tuple[str, str]:
    """The forward and backward functions a ``kind`` (rotary, swiglu) layer emits under ``kernel``."""
    suffix = "_eager" if kernel == "eager" else ""
    return f"{kind}{suffix}", f"{kind}{suffix}_backward"


def kept_extra(kind: str, shape, group: int = 1) -> int:
    """Elements (the schedule's dtype) autograd keeps beyond the layer's ``saved`` under ``eager``: a SwiGLU's
    ``silu(gate)`` (``shape``: its output block), or SDPA's expanded keys and values past the key/value heads
    the rotated block holds (``shape``: that block, ``group`` query heads per key/value head)."""
    rows, cols = shape
    if kind == "swiglu":
        return rows * cols
    return 2 * (group - 1) * rows * cols // (group + 2)
