"""Workloads as data: each a list of layer records, with everything else derived from that list.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``workload``        ``Workload``: the kinds (gemm, mlp, transformer) as layer lists; shapes, passes,
                    input blocks, the float64 reference
``decoder``         the transformer block's layer list, GPT or Llama family, from its architecture fields
``layers/``         one module per layer kind (``Linear``, ``LayerNorm``, ``Attention``, ...), with every
                    rule it needs
``functions``       the table of ``local`` functions, numpy and torch versions side by side, with shapes
                    and costs
``work``            ``Work``: what one ``local`` call costs (products, memory passes, FLOPs)
``llama_rules``     the shape and cost rules of the Llama block's ``local`` functions
``attention_cost``  the attention core's cost under FlashAttention-2 and under the unfused kernel
``op_checkpoint``   torchtitan's per-op selective checkpointing on a block: what it keeps and recomputes
``kernels/``        the transformer's kernels (LayerNorm pieces, attention, seeded dropout), numpy and torch
``graph``           dense forward and backward of any layer list, by token chunks (the transformer's
                    reference)
``blocks``          any block of a chain workload's tensors from the seed, by the layers' rules; their
                    dense reference
``tensors``         seeded tensor values, generated block by block
``models``          published transformer models (GPT-3, Megatron-LM, Llama 2 and 3.1, Mistral) as presets,
                    with their sources
``model_file``      model files: any dense decoder described in YAML or JSON
==================  ===============================================================================
"""

__all__ = ["attention_cost", "blocks", "decoder", "functions", "graph", "kernels", "layers", "llama_rules", "model_file",
           "models", "op_checkpoint", "tensors", "work", "workload"]
