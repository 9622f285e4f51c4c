"""Workloads as data: each a chain of layer records, with everything else derived from that list.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``workload``        ``Workload``: the kinds (gemm, mlp) as layer lists; shapes, passes, input blocks
``layers``          the layer records: ``Linear`` and ``Elementwise``, and their backward
``elementwise``     the table of elementwise functions, numpy and torch versions side by side
``dense``           the dense float64 reference: the layer list walked in numpy
``tensors``         seeded tensor values, generated block by block
==================  ===============================================================================
"""

__all__ = ["dense", "elementwise", "layers", "tensors", "workload"]
