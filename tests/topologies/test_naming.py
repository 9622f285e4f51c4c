"""Printed node and link names: every endpoint of a link in one scope."""

import json
import re

import networkx as nx
import pytest

from simulator.cli import main
from topologies import link_name, load_topology, scoped_name


@pytest.fixture(scope="module")
def two_servers():
    return load_topology("dgx-a100:2")


def test_gpus_are_printed_under_their_server_with_their_cluster_index(two_servers):
    assert scoped_name(two_servers, "gpu0") == "n0/gpu0"
    assert scoped_name(two_servers, "gpu10") == "n1/gpu10"


def test_server_devices_keep_their_names_and_cluster_switches_have_no_server(two_servers):
    assert scoped_name(two_servers, "n1/nic4") == "n1/nic4"
    assert scoped_name(two_servers, "leaf4") == "leaf4"
    assert link_name(two_servers, "gpu12", "n1/nic4") == "n1/gpu12->n1/nic4"
    assert link_name(two_servers, "n1/nic4", "leaf4") == "n1/nic4->leaf4"


def test_a_graph_without_servers_prints_node_ids_as_they_are():
    G = nx.DiGraph()
    G.add_edge("h0", "s")
    assert link_name(G, "h0", "s") == "h0->s"


def test_simulate_prints_links_in_one_scope_and_keeps_raw_ids_in_json(capsys):
    argv = ["simulate", "--algo", "2d", "--gpus", "16", "--workload", "gemm", "--m", "1024", "--k", "1024",
            "--n", "1024", "--topology", "dgx-a100:2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    printed = re.findall(r"(\S+)->(\S+) \(\w+\): ", text)
    assert printed
    for ends in printed:
        assert all("/" in end or end.startswith(("leaf", "spine")) for end in ends), ends
    assert main(argv + ["--json"]) == 0
    links = json.loads(capsys.readouterr().out)["links"]
    assert all(row["link"] == link_name(load_topology("dgx-a100:2"), row["src"], row["dst"]) for row in links)
    assert any(row["src"].startswith("gpu") or row["dst"].startswith("gpu") for row in links)
