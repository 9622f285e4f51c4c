"""The numerical kernels of the transformer block, each in numpy and in torch, for the ``local`` op table.

======================  ===================================================================================
module                  kernels
======================  ===================================================================================
``dropout``             inverted dropout whose mask is a hash of (seed, stream, global element index)
``fused_bias``          Megatron-LM's fused bias-GeLU and bias-dropout-add, and what each pass of them moves
``layernorm``           LayerNorm in pieces: row moments, normalise, and the backward's moments and gradients
``fused_norm``          LayerNorm and RMSNorm as one kernel per direction on whole rows, and what each pass moves
``norm_variants``       the norm as Transformer Engine's kernels and as eager PyTorch ops (``--norm-kernel``)
``pointwise_variants``  eager rotary, GQA key/value copies and SwiGLU: PyTorch ops (``--pointwise-kernel``)
``attention``           causal softmax attention per sequence and head (grouped-query too), and its backward
``rmsnorm``             RMSNorm in pieces: the row sum of squares, scale, and the backward's row sum and gradients
``rotary``              rotary position embeddings of the query and key heads, and their transpose
``swiglu``              silu(gate) * up on interleaved gate and up columns, and its backward
======================  ===================================================================================

``simulator.workloads.functions`` lists each kernel as an entry of the ``local`` op's table, with its
parameters, shape rule and cost.
"""

__all__ = ["attention", "dropout", "fused_bias", "fused_norm", "layernorm", "norm_variants", "pointwise_variants",
           "rmsnorm", "rotary", "swiglu"]
