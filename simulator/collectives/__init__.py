"""Collectives as point-to-point flows on ``simulator.network.flow_network``: algorithms, NCCL-like choices, runs.

Public API (for the schedule engine)::

    run_collective(env, net, kind, members, nbytes, root=None, algorithm=None, params=None) -> simpy.Process
    plan_collective(net, kind, members, nbytes, ...) -> CollectivePlan    # what would run, without running
    choose_algorithm(kind, n, nbytes, params=None, *, n_nodes=1, bandwidth_GBps=None) -> str
    CollectiveParams.from_graph(G)                                         # parameters from G.graph["sim"]

Files: ``params`` (parameters and their ``sim`` keys), ``patterns`` (the decompositions), ``trees``
(binomial and double binary trees), ``protocols`` (LL/LL128/Simple), ``choose`` (default algorithm),
``run`` (planning and running). Closed forms live in ``simulator.collectives.closed_form``.
"""

from simulator.collectives.choose import choose_algorithm
from simulator.collectives.params import PROTOCOLS, SIM_KEYS, CollectiveParams
from simulator.collectives.patterns import ALGORITHMS, KINDS, Phase, decompose
from simulator.collectives.run import CollectivePlan, plan_collective, run_collective

__all__ = [
    "ALGORITHMS",
    "KINDS",
    "PROTOCOLS",
    "SIM_KEYS",
    "CollectiveParams",
    "CollectivePlan",
    "Phase",
    "choose_algorithm",
    "decompose",
    "plan_collective",
    "run_collective",
]
