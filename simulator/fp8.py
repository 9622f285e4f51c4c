"""``--dtype fp8``: Transformer Engine's hybrid FP8 recipe, as a setting of the compute model on a topology.

Under the hybrid recipe (NVIDIA Transformer Engine, ``recipe.DelayedScaling(fp8_format=Format.HYBRID)``;
Micikevicius et al. 2022, "FP8 Formats for Deep Learning", arXiv 2209.05433) the linear layers' GEMMs
run on FP8 tensor cores, E4M3 in the forward and E5M2 for the gradients, while the master weights, the
optimizer state, the activations between layers, the attention core and the communication stay as in
bf16 training. So a plan in fp8 is the bfloat16 plan with the linears' ``gemm`` ops timed at the
device's dense FP8 rate (``ComputeConfig.fp8_gemms``) plus the passes that quantise their operands
(``simulator.fp8_cost``, under the scaling recipe ``ComputeConfig.fp8_recipe``: delayed, current or
MXFP8), each step quantising the layers' weights once, and the gathers of the linears' operands moving
FP8 (``simulator.fp8_comm``) and the linears' inputs kept in FP8 for the backward
(``simulator.memory.activations``, through ``StepOptions.fp8_recipe``); the states, the other activations
and the reductions are the bfloat16 plan's, and MFU is measured against the FP8 peak. Only GPUs with FP8 tensor cores (Hopper, Blackwell:
the presets carry ``float8`` rates from NVIDIA's datasheets, ``topologies.devices``) take it; an A100
is refused with one line.
"""

from __future__ import annotations

import networkx as nx

from simulator.compute import FP8
from simulator.errors import InputError
from simulator.fp8_cost import check_recipe, default_recipe

__all__ = ["fp8_topology", "fp8_label", "recipe_of"]


def fp8_topology(G: nx.Graph, recipe: str | None = None) -> nx.Graph:
    """A copy of ``G`` whose compute model times the linears' GEMMs at FP8 and their casts under ``recipe``
    (None: Transformer Engine's default for the GPUs; module doc); InputError naming the first GPU without
    an FP8 rate, or without the recipe."""
    for _, data in G.nodes(data=True):
        device = data.get("device") if data.get("kind") == "gpu" else None
        if device is not None and FP8 not in device.get("peak_tflops", {}):
            raise InputError(f"--dtype fp8: {device.get('name', '?')} has no FP8 tensor cores (FP8 needs Hopper or "
                             f"Blackwell: H100, H200, B200, GB200); use --dtype bfloat16")
        if device is not None:
            check_recipe(device, recipe)
    copy = G.copy()
    copy.graph["sim"] = {**(G.graph.get("sim") or {}), "fp8_gemms": True}
    if recipe is not None:
        copy.graph["sim"]["fp8_recipe"] = recipe
    return copy


RECIPE_NAMES = {"delayed": "hybrid, delayed scaling", "current": "hybrid, current scaling", "mxfp8": "MXFP8"}
"""How a plan's title names each recipe (with the FP8 formats of its default: E4M3 forward and E5M2
gradients, "hybrid", for the per-tensor recipes; E4M3 throughout for MXFP8)."""


def recipe_of(G: nx.Graph, device: dict) -> str:
    """The recipe a plan on ``G`` runs under ``--dtype fp8``: the one ``fp8_topology`` set, else Transformer
    Engine's default for ``device``."""
    return (G.graph.get("sim") or {}).get("fp8_recipe") or default_recipe(device)


def fp8_label(G: nx.Graph, device: dict) -> str:
    """The dtype as a plan's title prints it under ``--dtype fp8`` (``recipe_of``)."""
    return f"fp8 ({RECIPE_NAMES[recipe_of(G, device)]}: the linears in FP8)"
