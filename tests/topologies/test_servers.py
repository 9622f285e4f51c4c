"""SocketServer (the AC922 shape): its counts, degrees and routes, and the arguments it refuses."""

from collections import Counter

import pytest

from topologies.cluster import FabricSpec, fat_tree_cluster
from topologies.devices import V100_SXM2_16GB
from topologies.rates import IB_EDR, NVLINK2_LINK, POWER9_XBUS
from topologies.routing import Router
from topologies.servers import SocketServer
from topologies.validate import validate_graph


def ac922(**changes):
    return SocketServer(2, V100_SXM2_16GB, NVLINK2_LINK, **{"nics": 2, **changes})


def test_ac922_counts_and_degrees():
    G = ac922().build()
    assert validate_graph(G) == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert Counter(k for _, k in G.nodes(data="kind")) == {"cpu": 2, "gpu": 4, "nic": 2}
    # Each GPU: its pair and its socket. Each socket: 2 GPUs, the other socket, a NIC.
    assert [G.out_degree(g) for g in ("gpu0", "gpu1", "gpu2", "gpu3")] == [2, 2, 2, 2]
    assert G.out_degree("n0/cpu0") == G.out_degree("n0/cpu1") == 4
    assert G.edges["n0/cpu0", "n0/cpu1"]["bandwidth_GBps"] == POWER9_XBUS.bandwidth_GBps
    assert G.edges["gpu0", "n0/cpu0"]["peak_bandwidth_GBps"] == 75.0


def test_gpus_of_different_sockets_talk_through_both_sockets():
    G = ac922().build()
    router = Router(G)
    assert router.nodes("gpu0", "gpu1") == ("gpu0", "gpu1")
    assert router.nodes("gpu1", "gpu2") == ("gpu1", "n0/cpu0", "n0/cpu1", "gpu2")
    assert router.bottleneck_GBps("gpu1", "gpu2") == POWER9_XBUS.bandwidth_GBps


def test_three_sockets_are_joined_all_to_all_and_gpus_numbered_by_socket():
    G = SocketServer(3, V100_SXM2_16GB, NVLINK2_LINK, gpus_per_socket=3, links_per_pair=1, cpu_links=2).build()
    assert sum(1 for _, _, k in G.edges(data="kind") if k == "smp") == 6
    assert sorted(n for n in G.predecessors("n0/cpu2") if n.startswith("gpu")) == ["gpu6", "gpu7", "gpu8"]
    assert G.edges["gpu6", "gpu7"]["n_links"] == 1 and G.edges["gpu6", "n0/cpu2"]["n_links"] == 2


def test_socket_servers_join_a_fat_tree():
    G = fat_tree_cluster(ac922(), 3, FabricSpec(IB_EDR, leaf_down_ports=18))
    assert len(validate_graph(G)) == 12
    assert {G.nodes[g]["server"] for g in ("gpu4", "gpu7")} == {1}


@pytest.mark.parametrize("changes, match", [({"sockets": 0}, "sockets must be an integer >= 1"),
                                            ({"gpus_per_socket": 0}, "gpus_per_socket"),
                                            ({"cpu_links": 1.5}, "cpu_links"),
                                            ({"nics": 3}, r"nics \(3\) and sockets \(2\)"),
                                            ({"nics": -1}, "nics must be")])
def test_bad_arguments(changes, match):
    args = {"sockets": 2, "nics": 2, **changes}
    with pytest.raises(ValueError, match=match):
        SocketServer(args.pop("sockets"), V100_SXM2_16GB, NVLINK2_LINK, **args)
