"""Collectives as point-to-point flows on ``simulator.network.flow_network``: algorithms, NCCL-like choices, runs.

Public API (for the schedule engine)::

    run_collective(env, net, kind, members, nbytes, root=None, algorithm=None, params=None) -> simpy.Process
    plan_collective(net, kind, members, nbytes, ...) -> CollectivePlan    # what would run, without running
    choose_algorithm(kind, n, nbytes, params=None, *, n_nodes=1, bandwidth_GBps=None) -> str
    CollectiveParams.from_graph(G)                                         # parameters from G.graph["sim"]

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``params``          ``CollectiveParams``: the collective model's parameters and their ``sim`` keys
``patterns``        collectives decomposed into point-to-point flows, one algorithm each
``trees``           binomial and NCCL's double binary trees
``nccl_tree``       NCCL's tree all_reduce: chains in servers, a double binary tree across, per channel
``nvls_tree``       NCCL's NVLS tree all_reduce: NVLink SHARP in servers, a tree of NIC heads across
``nvls_chunks``     NCCL's NVLS chunk sizes and the fixed cost of each: NVLS below its rate under 1 GiB
``nvls_tree_fill``  NCCL's NVLS tree loops and the pipeline fill they cost: the NVLS tree below 1 GiB
``channel_caps``    NCCL's per-channel caps on its trees across servers: a tree's least time
``drain``           when a phase's last flow arrives, alone on the network
``equivalence``     route signatures: groups that make the same choice of algorithm and protocol
``protocols``       NCCL's LL, LL128 and Simple protocols: their cost in the model
``nccl_tuning``     NCCL's own tuning model (tuning.cc's constants): the time NCCL predicts per candidate
``choose``          NCCL's order of preference, filtered by the simulated times of the candidates
``run``             planning and running one collective on a ``FlowNetwork``
``closed_form``     the closed-form alpha-beta times of every collective
``nvls_support``    which topologies can run NVLS and the NVLS tree (NVLink SHARP), refusing the others
==================  ===============================================================================
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
