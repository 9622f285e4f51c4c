"""Workloads as data: each a chain of layer records, with everything else derived from that list.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``workload``        ``Workload``: the kinds (gemm, mlp) as layer lists; shapes, passes, input blocks
``layers/``         one module per layer kind (``Linear``, ``Elementwise``), with every rule it needs
``functions``       the table of elementwise functions, numpy and torch versions side by side
``blocks``          any block of any tensor from the seed, by the layers' rules; the dense reference
``tensors``         seeded tensor values, generated block by block
``models``          published transformer models (GPT-3, Megatron-LM) as presets, with their sources
==================  ===============================================================================
"""

__all__ = ["blocks", "functions", "layers", "models", "tensors", "workload"]
