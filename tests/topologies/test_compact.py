"""Clusters in five lines: compact descriptions build the presets' graphs where they name nothing new, hold the
fat tree's counts and bisection closed form where they do, and name every mistake in one line."""

from __future__ import annotations

import json
import math

import networkx as nx
import pytest

from topologies import load_topology
from topologies.bisection import bisection_GBps
from topologies.compact import compact_cluster, is_compact_string, parse_compact
from topologies.errors import TopologyError
from topologies.presets import build_preset
from topologies.profile import Profile, node_kind, write_profile
from tests.cli_run import run


def count(G, kind):
    return sum(1 for _, k in G.nodes(data="kind") if k == kind)


def same_graph(G, H) -> bool:
    """The same nodes, links and attributes, and the same ``sim`` (names and notes may differ)."""
    return (dict(G.nodes(data=True)) == dict(H.nodes(data=True))
            and {(u, v): d for u, v, d in G.edges(data=True)} == {(u, v): d for u, v, d in H.edges(data=True)}
            and G.graph["sim"] == H.graph["sim"])


@pytest.mark.parametrize("compact,preset", [
    ("server=dgx-h100,servers=4", "dgx-h100:4"),
    ("server=a100-4gpu,servers=3", "a100-4gpu:3"),
    ("server=dgx-a100", "dgx-a100"),
    ("gpu=H100,servers=2", "dgx-h100:2"),  # the custom form of the DGX H100's own rates and NICs
    ("gpu=A100-SXM4-40GB,gpus_per_server=8,servers=3", "dgx-a100:3"),
    ("fabric=torus,shape=2x2x4", "torus-3d:2x2x4"),
])
def test_a_description_that_changes_nothing_builds_the_preset(compact, preset):
    G = load_topology(compact)
    assert G.graph["name"] == compact
    assert same_graph(G, build_preset(preset))


@pytest.mark.parametrize("servers,leaf_ports,nics,oversubscription", [
    (64, 32, 4, 2.0), (64, 32, 4, 1.0), (8, 2, 8, 3.0), (40, 20, 2, 1.5)])
def test_four_200g_nics_oversubscribed_counts_and_bisection(servers, leaf_ports, nics, oversubscription):
    G = load_topology(f"server=dgx-h100,servers={servers},nics={nics},nic_Gbps=200,leaf_ports={leaf_ports},"
                      f"oversubscription={oversubscription:g}:1")
    groups = math.ceil(servers / leaf_ports)
    assert (count(G, "gpu"), count(G, "nic"), count(G, "leaf")) == (8 * servers, nics * servers, groups * nics)
    ib = [d for u, v, d in G.edges(data=True) if d["kind"] == "ib" and G.nodes[u]["kind"] == "nic"]
    assert len(ib) == nics * servers and {d["bandwidth_GBps"] for d in ib} == {24.0}  # HDR, topologies.rates
    # Each half fills whole leaf groups, so all of a half's NIC rate crosses the spines, cut by the ratio.
    assert bisection_GBps(G) == pytest.approx(servers / 2 * nics * 24.0 / oversubscription)


def test_oversubscription_halves_the_spine_capacity_and_rail_optimisation_changes_the_wiring():
    full = load_topology("server=dgx-a100,servers=40")
    half = load_topology("server=dgx-a100,servers=40,oversubscription=2")
    up = lambda G: sum(d["bandwidth_GBps"] for u, v, d in G.edges(data=True)  # noqa: E731
                       if G.nodes[u]["kind"] == "leaf" and G.nodes[v]["kind"] == "spine")
    assert up(half) == pytest.approx(up(full) / 2)
    grouped = load_topology("server=dgx-a100,servers=40,rail_optimised=false,leaf_ports=32")
    for s in range(40):
        assert len({n for i in range(8) for n in grouped.successors(f"n{s}/nic{i}") if n.startswith("leaf")}) == 1


def test_a_file_of_five_lines_is_the_same_cluster_and_saves_in_full(tmp_path, capsys):
    path = tmp_path / "four-nic.yaml"
    path.write_text("server: dgx-h100\nservers: 16\nnics: 4\nnic_Gbps: 200\noversubscription: 2\n")
    G = load_topology(str(path))
    assert same_graph(G, load_topology("server=dgx-h100,servers=16,nics=4,nic_Gbps=200,oversubscription=2"))
    as_json = tmp_path / "four-nic.json"
    as_json.write_text(json.dumps({"server": "dgx-h100", "servers": 16, "nics": 4, "nic_Gbps": 200,
                                   "oversubscription": 2}))
    assert same_graph(G, load_topology(str(as_json)))
    status, out, _ = run(capsys, "topology", "save", str(path), str(tmp_path / "full.yaml"))
    assert status == 0
    full = load_topology(str(tmp_path / "full.yaml"))
    assert same_graph(full, G) and "nodes:" in (tmp_path / "full.yaml").read_text()


def test_a_calibration_is_read_next_to_the_file(tmp_path):
    kind = node_kind(build_preset("dgx-a100"))
    write_profile(Profile(kind, {"ib": {"bandwidth_GBps": 20.0, "latency_us": 3.0}}, fitted_on="dgx-a100:2"),
                  str(tmp_path / "fitted.yaml"))
    (tmp_path / "cluster.yaml").write_text("server: dgx-a100\nservers: 4\ncalibration: fitted.yaml\n")
    G = load_topology(str(tmp_path / "cluster.yaml"))
    assert {d["bandwidth_GBps"] for u, v, d in G.edges(data=True)
            if d["kind"] == "ib" and G.nodes[u]["kind"] == "nic"} == {20.0}
    (tmp_path / "other.yaml").write_text("server: dgx-h100\nservers: 4\ncalibration: fitted.yaml\n")
    with pytest.raises(TopologyError, match="fitted on node kind 8x A100"):
        load_topology(str(tmp_path / "other.yaml"))


@pytest.mark.parametrize("spec,says", [
    ("sever=dgx-h100", "unknown key sever (did you mean server?)"),
    ("server=dgx-z", "server dgx-z: a server preset, one of dgx-a100, dgx-h100"),
    ("server=torus-3d", "server torus-3d: a server preset"),
    ("gpu=A100,servers=2", "gpu A100: which of one of A100-SXM4-40GB, A100-SXM4-80GB?"),
    ("gpu=T4", "gpu T4: one of A100-SXM4-40GB, H100-SXM5-80GB"),
    ("server=dgx-h100,gpu=H100", "server dgx-h100 names its GPU already; give server or gpu, not both"),
    ("server=dgx-h100,servers=0", "servers 0: an integer >= 1"),
    ("server=dgx-h100,servers=2,nic_Gbps=300", "nic_Gbps 300: a NIC rate in Gb/s, one of 56, 100, 200, 400"),
    ("server=dgx-h100,servers=2,oversubscription=0.5", "oversubscription 0.5: a number >= 1 (or N:1)"),
    ("server=dgx-h100,servers=2,rail_optimised=maybe", "rail_optimised maybe: true or false"),
    ("server=dgx-h100,servers=2,fabric=dragonfly", "fabric dragonfly: one of fat-tree, torus"),
    ("server=dgx-h100,oversubscription=2", "one server has no fabric"),
    ("server=dgx-h100,servers=2,rail_optimised=false,leaf_ports=4", "leaf_ports 4: a server-grouped leaf"),
    ("fabric=torus,shape=4x4", "shape 4x4: XxYxZ, e.g. 4x4x8"),
    ("fabric=torus,shape=2x2x2,servers=2", "fabric torus is a torus-3d of A100s, sized by shape alone; drop servers"),
    ("server=dgx-h100,shape=2x2x2", "shape sizes a torus; add fabric: torus, or drop shape"),
    ("servers=2", "give server: PRESET (e.g. dgx-h100) or gpu: MODEL"),
    ("server=dgx-h100,servers=100000", "800,000 GPUs is more than a tpsim topology holds"),
])
def test_every_mistake_is_named_in_one_line(capsys, spec, says):
    status, out, err = run(capsys, "topology", "show", spec)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("tpsim topology: error: ") and says in err, err


def test_all_mistakes_at_once_and_a_file_names_itself(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("server: dgx-h100\nservers: -1\nnic_Gbps: 300\nspeed: 9\n")
    with pytest.raises(TopologyError) as caught:
        load_topology(str(path))
    assert str(caught.value) == (f"{path}: unknown key speed (did you mean shape?); servers -1: an integer >= 1; "
                                 f"nic_Gbps 300: a NIC rate in Gb/s, one of 56, 100, 200, 400")


def test_the_string_form_is_told_from_presets_and_files():
    assert is_compact_string("server=dgx-h100,servers=4")
    assert not is_compact_string("dgx-h100:4") and not is_compact_string("my.yaml")
    assert parse_compact("server=x,servers=2") == {"server": "x", "servers": "2"}
    with pytest.raises(TopologyError, match="servers given twice"):
        parse_compact("servers=1,servers=2")
    with pytest.raises(TopologyError, match="a cluster is a mapping"):
        compact_cluster(["server"])


def test_every_command_takes_the_string(capsys):
    status, out, _ = run(capsys, "collective", "--op", "all_reduce", "--group-size", "16", "--bytes", "64MiB",
                         "--topology", "server=dgx-h100,servers=2,nics=4,nic_Gbps=200")
    assert status == 0 and "server=dgx-h100,servers=2,nics=4,nic_Gbps=200" in out
    assert nx.is_directed(load_topology("gpu=B200,servers=2,oversubscription=2:1"))
