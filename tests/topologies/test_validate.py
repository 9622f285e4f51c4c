"""Graph-level validation (what files, presets and hand-built graphs all pass through), and docstring examples."""

import doctest
import importlib
import pkgutil

import networkx as nx
import pytest

import topologies
from topologies import TopologyError, gpu_nodes, validate_graph
from topologies.builders import ring, torus


def test_gpu_nodes_are_ordered_by_index_not_by_name():
    assert gpu_nodes(torus((12,)))[9:11] == ["gpu9", "gpu10"]
    assert validate_graph(ring(3)) == ["gpu0", "gpu1", "gpu2"]


def broken(change):
    G = ring(4)
    change(G)
    return G


@pytest.mark.parametrize(
    "change, match",
    [(lambda G: G.add_edge("gpu0", "gpu0", bandwidth_GBps=1.0, latency_us=0.0, kind="nvlink"),
      "link gpu0-gpu0 connects a node to itself"),
     (lambda G: G.edges["gpu1", "gpu2"].update(peak_bandwidth_GBps=-5.0), "peak_bandwidth_GBps must be > 0, got -5"),
     (lambda G: G.edges["gpu1", "gpu2"].update(n_links=0), "n_links must be an integer >= 1, got 0"),
     (lambda G: G.edges["gpu1", "gpu2"].update(latency_us=float("nan")), "latency_us must be >= 0, got nan"),
     (lambda G: G.edges["gpu1", "gpu2"].pop("kind"), "link gpu1-gpu2 has unknown kind None"),
     (lambda G: G.nodes["gpu1"].update(gpu_index=True), "gpu_index must be an integer >= 0, got True"),
     (lambda G: G.nodes["gpu1"].update(gpu_index=0), "GPUs gpu0 and gpu1 both have gpu_index 0"),
     (lambda G: G.nodes["gpu1"].pop("server"), "GPU gpu1 needs a server index"),
     (lambda G: G.nodes["gpu1"]["device"].update(colour="red"), "device A100-SXM4-40GB has unknown key 'colour'"),
     (lambda G: G.nodes["gpu1"]["device"]["peak_tflops"].update(float32=0), "peak_tflops.float32 must be > 0"),
     (lambda G: G.graph.update(name=3), "graph name must be a string"),
     (lambda G: G.graph.update(torus_dims=[2, 3]), r"graph torus_dims \[2, 3\] hold 6 GPUs, the topology has 4"),
     (lambda G: G.graph.update(torus_dims=[4, True]), "graph torus_dims must be a list of positive integers"),
     (lambda G: G.graph["sim"].update({"x": float("inf")}), "sim.x: must hold numbers"),
     (lambda G: G.graph["sim"].update(collective_base_latncy_us=5.0),
      "unknown key 'collective_base_latncy_us' in the sim section \\(did you mean 'collective_base_latency_us'\\?\\); "
      "known: collective_base_latency_us, "),
     (lambda G: G.graph["sim"].update(collective_kind_bytes_factors={"allgather": 2.0}),
      "unknown key 'allgather' in the sim section's collective_kind_bytes_factors \\(did you mean 'all_gather'"),
     (lambda G: G.graph["sim"].update(calibration={"format": "tpsim-calibration", "version": 1, "node_kind": "x",
                                                   "sim": {"gemm_efficency": 0.5}}),
      "sim.calibration: unknown key 'gemm_efficency' in the calibration profile's sim section"),
     (lambda G: G.graph["sim"].update(calibration={"format": "tpsim-calibration", "version": 1, "node_kind": "x",
                                                   "links": {"nvlink": {"latncy_us": 1}}}),
      "sim.calibration: links.nvlink must map some of"),
     (lambda G: G.remove_edges_from([("gpu1", "gpu2"), ("gpu2", "gpu1"), ("gpu3", "gpu0"), ("gpu0", "gpu3")]),
      "gpu0 cannot reach gpu2")],
)
def test_graph_errors(change, match):
    with pytest.raises(TopologyError, match=match):
        validate_graph(broken(change))


def test_only_directed_simple_graphs():
    with pytest.raises(TopologyError, match="must be a networkx DiGraph, got Graph"):
        validate_graph(nx.Graph(ring(3)))
    with pytest.raises(TopologyError, match="got MultiDiGraph"):
        validate_graph(nx.MultiDiGraph(ring(3)))


@pytest.mark.parametrize("module", sorted(m.name for m in pkgutil.iter_modules(topologies.__path__)))
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(f"topologies.{module}"))
    assert result.failed == 0
