"""The layer kinds a workload lists, one module each: every rule a layer kind needs lives in its module.

====================  ===============================================================================
module                layer kind
====================  ===============================================================================
``linear``            ``Linear``: y = x w (+ b); dx = dy w^T, dw = x^T dy, db = sum of dy over rows
``elementwise``       ``Elementwise``: y = f(x); dx = f_backward(dy, x)
``layernorm``         ``LayerNorm``: y = LN(x) gamma + beta, with the row moments as a tensor
``attention``         ``Attention``: the causal multi-head attention core on whole sequences and heads
``dropout``           ``Dropout``: y = dropout(x) with a mask from the seed and the global index
``residual``          ``Residual``: y = a + b, the gradient passed to both
``bias_gelu``         ``BiasGelu``: z = gelu(h + b) in one pass (Megatron-LM's ``--bias-gelu-fusion``)
``bias_dropout_add``  ``BiasDropoutAdd``: y = r + dropout(x + b) in one pass (``--bias-dropout-fusion``)
``rmsnorm``           ``RMSNorm``: y = x / rms(x) gamma, with the row sum of squares as a tensor (Llama)
``swiglu``            ``SwiGLU``: z = silu(gate) up on interleaved gate/up columns (Llama's MLP)
``rotary``            ``Rotary``: rotary position embeddings of the query and key heads (Llama)
``common``            what every kind shares: gradient names (``grad``), the ``Sum`` record
====================  ===============================================================================

A workload is a list of layers in order on activations of M rows (tokens); each layer reads tensors
that the workload's input or earlier layers made (a chain for ``gemm`` and ``mlp``; the transformer
block's residuals read a tensor twice); a tensor's gradient is named ``grad(name)``. Every kind gives:

- sizes: ``inputs`` (activation names), ``outputs`` (name -> columns), ``weights`` (name -> shape), and
  ``saved`` (what its backward reads of the forward);
- dense values (``simulator.workloads.graph``): ``forward(ctx, values)`` and ``backward(ctx, values,
  grads)`` on whole arrays through the ``local`` function table, numpy or torch alike;
- lowering onto an algorithm (``simulator.algorithms.compose``): ``input_layout`` / ``output_layouts``
  / ``weight_layout`` say where its blocks live, ``lower_forward`` / ``lower_backward`` emit its ops.

The chain kinds (``Linear`` without a bias, ``Elementwise``) also give block rules for
``simulator.workloads.blocks`` (``in_cols`` / ``out_cols``, ``output_block``, ``input_grad_block``,
``sums``), which the executor's chunked reference of ``gemm`` and ``mlp`` walks.
"""

from simulator.workloads.layers.attention import Attention
from simulator.workloads.layers.bias_dropout_add import BiasDropoutAdd
from simulator.workloads.layers.bias_gelu import BiasGelu
from simulator.workloads.layers.common import Sum, grad
from simulator.workloads.layers.dropout import Dropout
from simulator.workloads.layers.elementwise import Elementwise
from simulator.workloads.layers.layernorm import LayerNorm
from simulator.workloads.layers.linear import Linear
from simulator.workloads.layers.residual import Residual
from simulator.workloads.layers.rmsnorm import RMSNorm
from simulator.workloads.layers.rotary import Rotary
from simulator.workloads.layers.swiglu import SwiGLU

Layer = (Linear | Elementwise | LayerNorm | RMSNorm | Attention | Rotary | SwiGLU | Dropout | Residual | BiasGelu
         | BiasDropoutAdd)
"""Every layer kind."""

__all__ = ["Attention", "BiasDropoutAdd", "BiasGelu", "Dropout", "Elementwise", "LayerNorm", "Layer", "Linear",
           "RMSNorm", "Residual", "Rotary", "SwiGLU", "Sum", "grad"]
