"""The fit's fast closed-form evaluator against the simulator it stands in for, at random knob values.

Inside one server it must equal the flow simulation (``simulate_buckets``); for groups across servers,
where rings share NICs and NVSwitch ports, it must equal ``simulator.collectives.closed_form.predict_collective_s`` (a lower
bound on the simulation there).
"""

import numpy as np
import pytest
import simpy

from simulator.calibrate.evaluator import CollectiveEvaluator, members_for
from simulator.calibrate.fit import simulate_buckets
from simulator.calibrate.knobs import apply_values, collective_knobs
from simulator.collectives.closed_form import predict_collective_s
from simulator.collectives.params import CollectiveParams
from simulator.errors import InputError
from simulator.network.flow_network import FlowNetwork
from topologies import gpu_nodes, load_topology

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


def _keys(G) -> list:
    n = len(gpu_nodes(G))
    sizes = (8, 4096, 1 << 20, 3 << 22, 1 << 30)
    return [(k, r, s) for k in KINDS for r in sorted({1, 2, 3, n // 2, n}) for s in sizes] + \
           [("send", 2, s) for s in (8, 1 << 20)]


@pytest.mark.parametrize("spec", ["dgx-a100", "loopback:4", "a100-4gpu", "pcie-8gpu", "dgx-a100:2"])
def test_evaluator_equals_the_simulator_at_random_knob_values(spec):
    G = load_topology(spec)
    keys = _keys(G)
    evaluator = CollectiveEvaluator(G, keys)
    # Every kind but the reference (all_reduce) gets a bytes factor, at random like the other knobs.
    knobs = collective_knobs(G, evaluator.exercised_kinds(), collective_kinds=[*KINDS, "send"])
    assert sum(k.target == "kind" for k in knobs) == len(KINDS)
    rng = np.random.default_rng(7)
    values = [k.start * float(np.exp(rng.normal(0, 0.5))) for k in knobs]
    H = apply_values(G, knobs, values)
    fast = evaluator.predict({k.key: v for k, v in zip(knobs, values) if k.target == "bandwidth"},
                             {k.key: v for k, v in zip(knobs, values) if k.target == "latency"},
                             CollectiveParams.from_graph(H))
    flow = simulate_buckets(H, keys)
    net = FlowNetwork(simpy.Environment(), H)
    for (kind, ranks, nbytes), t, t_flow in zip(keys, fast, flow):
        members = members_for(H, ranks)
        if len({H.nodes[m]["server"] for m in members}) == 1:
            assert t == pytest.approx(t_flow, rel=1e-9), (kind, ranks, nbytes)
        else:
            root = 0 if kind in ("broadcast", "reduce") else None
            assert t == pytest.approx(predict_collective_s(net, kind, members, nbytes, root), rel=1e-12)


def test_exercised_kinds_are_the_kinds_on_routes():
    G = load_topology("dgx-a100:2")
    assert CollectiveEvaluator(G, [("all_reduce", 8, 1 << 20)]).exercised_kinds() == ["nvswitch"]
    assert CollectiveEvaluator(G, [("all_reduce", 16, 1 << 20)]).exercised_kinds() == ["ib", "nic", "nvswitch"]


def test_a_sample_on_more_ranks_than_gpus_is_an_input_error():
    with pytest.raises(InputError, match="16 ranks does not fit topology dgx-a100, which has 8 GPUs"):
        CollectiveEvaluator(load_topology("dgx-a100"), [("all_reduce", 16, 8)])
