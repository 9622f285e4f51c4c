"""Groups with equal route signatures share one choice of algorithm and protocol, and it changes nothing.

``plan_collective`` times the candidates once per route signature (``collectives.equivalence``) and
reuses the choice for every group whose routes match up to link names. These tests hold the plans so
made equal, field for field, to the plans of each group timed alone on a fresh network, on the rows
and columns of a 64-GPU grid over 8 servers, and check that a group whose routes really differ is
timed on its own.
"""

from __future__ import annotations

import pytest
import simpy

from simulator.collectives.equivalence import route_signature
from simulator.collectives.run import plan_collective, plan_time_s
from simulator.network.flow_network import FlowNetwork
from topologies import load_topology
from topologies.validate import gpu_nodes

Q = 8  # an 8 x 8 grid on dgx-h100:8, rank r on GPU r: a row is one server, a column spans all eight


def _net(G) -> FlowNetwork:
    return FlowNetwork(simpy.Environment(), G)


def _groups(G) -> list[tuple[str, ...]]:
    gpus = gpu_nodes(G)
    rows = [tuple(gpus[i * Q + j] for j in range(Q)) for i in range(Q)]
    columns = [tuple(gpus[i * Q + j] for i in range(Q)) for j in range(Q)]
    return rows + columns


CASES = [("broadcast", 1 << 24, 3), ("all_reduce", 1 << 26, None), ("all_gather", 1 << 20, None),
         ("reduce", 1 << 16, 5)]


@pytest.mark.parametrize("kind,nbytes,root", CASES)
def test_shared_choice_equals_each_group_alone(kind, nbytes, root):
    G = load_topology("dgx-h100:8")
    shared = _net(G)
    for members in _groups(G):
        together = plan_collective(shared, kind, members, nbytes, root)
        alone = plan_collective(_net(G), kind, members, nbytes, root)
        assert together == alone


def test_translated_groups_are_timed_once():
    G = load_topology("dgx-h100:8")
    net = _net(G)
    for members in _groups(G):
        plan_collective(net, "broadcast", members, 1 << 24, 3)
    choices = [key for key in net.cache if isinstance(key, tuple) and key[0] == "choice"]
    # The eight rows (one server each) are alike, and so are the eight columns (one GPU per server,
    # each column on its own NIC rail): two signatures for sixteen groups.
    assert len(choices) == 2


def test_every_root_shares_one_signature_per_group_and_changes_nothing():
    # A SUMMA grid broadcasts from every rank of a row in turn: the group's signature covers every
    # root's pairs, so it is taken once per group, and every root's plan is still the group's alone.
    G = load_topology("dgx-h100:8")
    net = _net(G)
    groups = _groups(G)
    for members in groups:
        for root in range(Q):
            assert plan_collective(net, "broadcast", members, 1 << 24, root) == \
                plan_collective(_net(G), "broadcast", members, 1 << 24, root)
    signatures = [key for key in net.cache if isinstance(key, tuple) and key[0] == "group signature"]
    assert len(signatures) == len(groups)


def test_a_slower_link_gets_its_own_signature():
    G = load_topology("dgx-h100:8")
    rows = _groups(G)[:2]
    pairs = tuple((a, (a + 1) % Q, None) for a in range(Q))
    net = _net(G)
    assert route_signature(net, rows[0], pairs) == route_signature(net, rows[1], pairs)
    first_hop = net.router.path(rows[1][0], rows[1][1])[0]
    G.edges[first_hop]["bandwidth_GBps"] /= 2
    slowed = _net(G)
    assert route_signature(slowed, rows[0], pairs) != route_signature(slowed, rows[1], pairs)


@pytest.mark.parametrize("kind,nbytes,root", CASES)
def test_the_time_the_choice_kept_is_the_plans_own(kind, nbytes, root):
    G = load_topology("dgx-h100:8")
    net = _net(G)
    for members in _groups(G):  # the first row and column are timed, the others reuse their choice
        plan = plan_collective(net, kind, members, nbytes, root)
        assert plan.contention_free_s == plan_time_s(net, plan)


def test_sizes_that_time_the_same_pairs_share_one_signature_and_change_nothing():
    # A data-parallel reduction times every bucket size on the same groups: the signature is keyed by the
    # pairs the candidates time, so sizes with equal pairs take it once, and every plan is still the one a
    # fresh network gives that group and size alone.
    G = load_topology("dgx-h100:8")
    net = _net(G)
    groups = _groups(G)
    sizes = [1 << 16, 3 << 20, 25_000_000, 1 << 26, 25_000_001]
    for kind in ("all_reduce", "reduce_scatter"):
        for members in groups:
            for nbytes in sizes:
                assert plan_collective(net, kind, members, nbytes) == plan_collective(_net(G), kind, members, nbytes)
    signatures = [key for key in net.cache if isinstance(key, tuple) and key[0] == "group signature"]
    shapes = [key for key in net.cache if isinstance(key, tuple) and key[0] == "every root's pairs"]
    # Without the pairs' numbers every (group, shape) took a signature of its own.
    assert len(signatures) <= len(groups) * len(set(net.cache["timed pairs numbers"].values()))
    assert len(signatures) < len(groups) * len(shapes)
