"""NVLS (NVLink SHARP) only where the switch has it: ``--algo nvls`` on a DGX A100 is refused, not timed.

NVLS reduces inside the NVSwitch, with its multicast and in-switch arithmetic: the third-generation
NVSwitch (Hopper, DGX H100; NVIDIA's DGX H100 system architecture whitepaper introduces NVLink SHARP with
it) and later have it, the A100's second generation and earlier do not, and NCCL's NVLS needs CUDA
multicast objects, which only such systems offer. A topology says whether its GPUs share such a switch with
its ``sim`` key ``collective_nvls`` (``CollectiveParams.nvls``; the Hopper and Blackwell presets set it).
Forcing ``nvls`` or ``nvls_tree`` where it is false used to print a time for hardware that cannot run it.
"""

from __future__ import annotations

from simulator.collectives.params import CollectiveParams
from simulator.collectives.patterns import ALGORITHMS
from simulator.errors import InputError

__all__ = ["NVLS_ALGORITHMS", "check_nvls"]

NVLS_ALGORITHMS = ("nvls", "nvls_tree")
"""The algorithms that need NVLink SHARP."""


def check_nvls(algorithm: str | None, kind: str, params: CollectiveParams, topology: str,
               flag: str = "--algo") -> None:
    """InputError when ``algorithm`` needs NVLink SHARP and the topology (named ``topology``) has none."""
    if algorithm not in NVLS_ALGORITHMS or params.nvls:
        return
    valid = [a for a in ALGORITHMS.get(kind, ()) if a not in NVLS_ALGORITHMS]
    raise InputError(f"{flag} {algorithm}: topology {topology} has no NVLink SHARP (NVLS needs a third-generation "
                     f"NVSwitch, Hopper or later; its sim collective_nvls is false); valid here: {', '.join(valid)}")
