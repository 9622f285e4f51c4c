"""Files: build -> save -> load is lossless in YAML, JSON and GraphML; every validation error is named."""

import json

import networkx as nx
import pytest
import yaml

from topologies import PRESETS, TopologyError, load_topology, save_topology
from topologies.bisection import bisection
from topologies.fileformat import graph_to_document

SMALL = [name if name not in ("torus-3d",) else "torus-3d:2x2x3" for name in PRESETS] + ["dgx-a100:2", "a100-4gpu:3"]


def same(G, H):
    assert nx.utils.graphs_equal(G, H)
    assert list(G.nodes) == list(H.nodes)
    assert G.graph == H.graph
    for node in G:
        assert G.nodes[node] == H.nodes[node]
    for a, b, data in G.edges(data=True):
        assert {k: type(v) for k, v in data.items()} == {k: type(v) for k, v in H.edges[a, b].items()}


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".graphml"])
@pytest.mark.parametrize("spec", SMALL)
def test_round_trip_is_lossless(tmp_path, spec, suffix):
    G = load_topology(spec)
    # Nested sections of known keys (an unknown one is refused): mappings, lists, booleans, None.
    G.graph["sim"]["collective_kind_bytes_factors"] = {"all_gather": 2.5, "send": 1}
    G.graph["sim"]["calibration"] = {"format": "tpsim-calibration", "version": 1, "node_kind": "any", "preset": None,
                                     "links": {"nvlink": {"latency_us": 0.5}}, "sim": {"collective_nvls": False},
                                     "undetermined": ["ib.latency_us", "ib.bandwidth_GBps"], "notes": "x"}
    path = str(tmp_path / f"topo{suffix}")
    save_topology(G, path)
    same(G, load_topology(path))


def test_one_way_links_extra_attributes_and_shared_device_names_survive(tmp_path):
    G = load_topology("a100-4gpu")
    G.remove_edge("gpu1", "gpu0")
    G.edges["gpu2", "gpu3"]["measured_GBps"] = 70.5
    G.edges["gpu3", "gpu2"]["bandwidth_GBps"] = 60.0  # asymmetric: two one-way entries
    G.nodes["gpu3"]["device"] = dict(G.nodes["gpu3"]["device"], memory_GB=80.0)  # same name, other spec
    G.nodes["n0/nic0"]["label"] = "left"
    doc = graph_to_document(G)
    assert set(doc["devices"]) == {"A100-SXM4-40GB", "A100-SXM4-40GB#2"}
    for suffix in (".yaml", ".json", ".graphml"):
        path = str(tmp_path / f"t{suffix}")
        save_topology(G, path)
        same(G, load_topology(path))


def test_a_file_torus_shape_gives_the_dimension_cuts(tmp_path):
    # The 2x8x8 preset saved as a file still finds the y cut: torus_dims travel with it.
    for suffix in (".yaml", ".graphml"):
        path = str(tmp_path / f"t{suffix}")
        save_topology(load_topology("torus-3d:2x8x8"), path)
        best = bisection(load_topology(path))
        assert (best.GBps, best.cut) == (pytest.approx(1226.67, rel=1e-5), "across y of 2x8x8, y < 4 | y >= 4")


TWO_GPUS = """
name: two
notes: test
sim: {collective_base_latency_us: 8.0}
devices:
  A100: {peak_tflops: {float64: 19.5, float32: 19.5, bfloat16: 312, float16: 312}, mem_bandwidth_GBps: 1555, memory_GB: 40}
nodes:
  - {name: gpu0, kind: gpu, device: A100}
  - {name: gpu1, kind: gpu, device: A100}
  - {name: sw, kind: nvswitch}
links:
  - {a: gpu0, b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}
  - {a: gpu1, b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}
"""


def write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_hand_written_file_loads_with_defaults(tmp_path):
    G = load_topology(write(tmp_path, TWO_GPUS))
    assert G.nodes["gpu1"]["gpu_index"] == 1 and G.nodes["gpu1"]["server"] == 0
    assert G.nodes["gpu0"]["device"]["name"] == "A100"
    assert G.number_of_edges() == 4 and G.graph["sim"] == {"collective_base_latency_us": 8.0}


def test_json_files_load_too(tmp_path):
    doc = yaml.safe_load(TWO_GPUS)
    G = load_topology(write(tmp_path, json.dumps(doc), "t.json"))
    assert G.number_of_nodes() == 3


BREAKAGES = [
    (lambda t: t.replace("b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}\n  - {a: gpu1",
                         "b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}\n  - {a: x"),
     'unknown node "x" in link 2'),
    (lambda t: t.replace("{a: gpu0, b: sw, bandwidth_GBps: 230", "{a: gpu0, b: sw, bandwidth_GBps: -1"),
     "link gpu0-sw bandwidth_GBps must be > 0, got -1"),
    (lambda t: t.replace("{a: gpu0, b: sw, bandwidth_GBps: 230", "{a: gpu0, b: sw, bandwidth_GBps: 0"),
     "link gpu0-sw bandwidth_GBps must be > 0, got 0"),
    (lambda t: t.replace("{a: gpu0, b: sw, bandwidth_GBps: 230", "{a: gpu0, b: sw, bandwidth_GBps: fast"),
     "link gpu0-sw bandwidth_GBps must be > 0, got 'fast'"),
    (lambda t: t.replace("latency_us: 0.3, kind: nvswitch}\n  - {a: gpu1", "latency_us: -2, kind: nvswitch}\n  - {a: gpu1"),
     "link gpu0-sw latency_us must be >= 0, got -2"),
    (lambda t: t + "  - {a: sw, b: gpu0, bandwidth_GBps: 1, latency_us: 0, kind: nvswitch, duplex: false}\n",
     r"duplicate link sw-gpu0 \(links 1 and 3\)"),
    (lambda t: t.replace("  - {name: sw, kind: nvswitch}", "  - {name: sw, kind: nvswitch}\n  - {name: gpu1, kind: host}"),
     r"duplicate node gpu1 \(nodes 2 and 4\)"),
    (lambda t: t.replace("{a: gpu1, b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}", "{a: gpu1, b: gpu1x}")
     .replace("  - {name: sw, kind: nvswitch}", "  - {name: sw, kind: nvswitch}\n  - {name: gpu1x, kind: switch}"),
     "link 2 gpu1-gpu1x needs bandwidth_GBps"),
    (lambda t: t.replace("kind: nvswitch}\n  - {a: gpu1", "kind: nvswitch, duplex: false}\n  - {a: gpu1"),
     "sw cannot reach gpu0|gpu1 cannot reach gpu0"),
    (lambda t: t.replace("  - {a: gpu1, b: sw, bandwidth_GBps: 230, latency_us: 0.3, kind: nvswitch}\n", ""),
     "gpu0 cannot reach gpu1"),
    (lambda t: t.replace("device: A100}\n  - {name: gpu1", "device: H100}\n  - {name: gpu1"),
     'node gpu0 uses unknown device "H100" \\(known: A100\\)'),
    (lambda t: t.replace("{name: sw, kind: nvswitch}", "{name: sw, kind: router}"),
     "node sw has unknown kind 'router'"),
    (lambda t: t.replace("latency_us: 0.3, kind: nvswitch}\n  - {a: gpu1", "latency_us: 0.3, kind: wifi}\n  - {a: gpu1"),
     "link gpu0-sw has unknown kind 'wifi'"),
    (lambda t: t.replace("{a: gpu0, b: sw, bandwidth_GBps: 230", "{a: gpu0, b: sw, bandwith_GBps: 230"),
     "link 1 has unknown key 'bandwith_GBps'"),
    (lambda t: t.replace("name: two", "name: two\ncolour: red"), "unknown top-level key 'colour'"),
    (lambda t: t.replace("{name: gpu1, kind: gpu, device: A100}", "{name: gpu7, kind: gpu, device: A100}")
     .replace("a: gpu1", "a: gpu7"), "GPU gpu7 has gpu_index 1, so it must be named gpu1"),
    (lambda t: t.replace("{name: gpu1, kind: gpu, device: A100}", "{name: gpu2, kind: gpu, gpu_index: 2, device: A100}")
     .replace("a: gpu1", "a: gpu2"), "gpu_index must run 0..1; gpu1 is missing"),
    (lambda t: t.replace("float16: 312}", "half: 312}"), "device A100 peak_tflops lacks float16"),
    (lambda t: t.replace("memory_GB: 40}", "memory_GB: 0}"), "device A100 memory_GB must be > 0, got 0"),
    (lambda t: t.replace("{name: gpu0, kind: gpu, device: A100}", "{name: gpu0, kind: gpu}"), "GPU gpu0 has no device"),
    (lambda t: t.replace("{name: gpu0, kind: gpu, device: A100}", "{name: gpu0, kind: gpu, device: A100, server: -1}"),
     "node gpu0 server must be an integer >= 0, got -1"),
    (lambda t: t.replace("sim: {collective_base_latency_us: 8.0}", "sim: {bad: !!set {a, b}}"),
     "sim.bad: must hold numbers, strings, lists or mappings"),
    (lambda t: t.replace("sim: {collective_base_latency_us: 8.0}", "sim: [1, 2]"), "graph sim must be a mapping"),
    (lambda t: t.replace("name: two", "name: two\ntorus_dims: [2, 2]"),
     r"graph torus_dims \[2, 2\] hold 4 GPUs, the topology has 2"),
    (lambda t: t.replace("name: two", "name: two\ntorus_dims: 2x1"),
     "graph torus_dims must be a list of positive integers, got '2x1'"),
    (lambda t: t.replace("nodes:\n", "nodes: {}\n", 1).split("  - {name: gpu0")[0], "nodes must be a list"),
    (lambda t: t.replace("name: two", "name: !!python/object/apply:os.system [echo hi]"), "bad YAML at line 2"),
    (lambda t: t.replace("links:", "links: [oops"), "bad YAML"),
    (lambda t: "- just\n- a list\n", "a topology file must be a mapping, got list"),
    (lambda t: t.replace("kind: gpu", "kind: host").replace("  - {name: sw, kind: nvswitch}", "  - {name: sw, kind: nvswitch}"),
     "node gpu0 is a host; only gpu nodes carry a device"),
]


@pytest.mark.parametrize("breakage, match", BREAKAGES, ids=[m[:40] for _, m in BREAKAGES])
def test_each_validation_error_names_the_problem(tmp_path, breakage, match):
    path = write(tmp_path, breakage(TWO_GPUS))
    with pytest.raises(TopologyError, match=match) as caught:
        load_topology(path)
    message = str(caught.value)
    assert message.startswith(path + ": ") and "\n" not in message


def test_no_gpus_and_missing_files(tmp_path):
    with pytest.raises(TopologyError, match="topology has no GPU nodes"):
        load_topology(write(tmp_path, "name: empty\nnodes: [{name: s, kind: switch}]\nlinks: []\n"))
    with pytest.raises(TopologyError, match="topology file nowhere.yaml not found"):
        load_topology("nowhere.yaml")
    with pytest.raises(TopologyError, match="neither a preset"):
        load_topology("dir/thing.txt")
    with pytest.raises(TopologyError, match="bad JSON at line 1"):
        load_topology(write(tmp_path, "{nope", "t.json"))
    with pytest.raises(TopologyError, match="use a name ending in"):
        save_topology(load_topology("loopback"), str(tmp_path / "t.txt"))


def test_graphml_errors(tmp_path):
    G = load_topology("loopback:2")
    path = str(tmp_path / "t.graphml")
    save_topology(G, path)
    text = open(path).read()
    with pytest.raises(TopologyError, match="not a readable GraphML file"):
        load_topology(write(tmp_path, text[: len(text) // 2], "cut.graphml"))
    # A parallel edge in the XML: networkx reads a multigraph, which is a duplicate link here.
    edge = text[text.index("<edge "): text.index("</edge>") + len("</edge>")]
    with pytest.raises(TopologyError, match="duplicate link"):
        load_topology(write(tmp_path, text.replace(edge, edge + edge), "dup.graphml"))
    with pytest.raises(TopologyError, match="device_json is not valid JSON"):
        load_topology(write(tmp_path, text.replace("{\"name\": \"cpu-core\"", "{\"name: \"cpu-core\"", 1), "bad.graphml"))
    # An undirected GraphML file is read as duplex links.
    undirected = str(tmp_path / "u.graphml")
    nx.write_graphml(nx.Graph(nx.read_graphml(path)), undirected)
    assert load_topology(undirected).number_of_edges() == G.number_of_edges()
