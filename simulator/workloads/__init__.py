"""Workloads: what is computed (gemm, mlp), its tensors, and the seeded values every consumer shares.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``workload``        ``Workload``: sizes, tensor shapes, inputs and outputs per pass, dense reference
``tensors``         seeded tensor values, generated block by block
==================  ===============================================================================
"""

__all__ = ["tensors", "workload"]
