"""The layer kinds a workload chains, one module each: every rule a layer kind needs lives in its module.

==================  ===============================================================================
module              layer kind
==================  ===============================================================================
``linear``          ``Linear``: y = x w; dx = dy w^T, dw = x^T dy
``elementwise``     ``Elementwise``: y = f(x); dx = f_backward(dy, x)
``common``          what every kind shares: gradient names (``grad``), the ``Sum`` record
==================  ===============================================================================

A workload is a chain of layers on activations of M rows (tokens): each layer reads the previous
layer's output; a tensor's gradient is named ``grad(name)``. Three walkers read the chain, and ask each
layer for its own rule, so a new layer kind is one module here (plus its tests):

- sizes: ``in_cols`` / ``out_cols`` (columns of its input and output), ``weights`` (name -> shape);
- values, on any array type (``simulator.workloads.blocks``, for numpy and for the executor's torch):
  ``output_block(ev, rows, cols)`` and ``input_grad_block(ev, rows, cols)`` compute a block of its
  output and of its input's gradient from blocks that ``ev`` supplies; ``sums(m)`` lists the tensors it
  computes as a sum over a contracted dimension, with the term of one chunk (the executor chunks them);
- lowering onto an algorithm (``simulator.algorithms.compose``): ``input_layout`` / ``output_layout``
  / ``weight_layout`` say where its blocks live, ``lower_forward`` / ``lower_backward`` emit its ops.
"""

from simulator.workloads.layers.elementwise import Elementwise
from simulator.workloads.layers.common import Sum, grad
from simulator.workloads.layers.linear import Linear

Layer = Linear | Elementwise
"""Every layer kind."""

__all__ = ["Elementwise", "Layer", "Linear", "Sum", "grad"]
