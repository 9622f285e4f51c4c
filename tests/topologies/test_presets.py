"""Every preset builds and validates; its rates are the documented effective ones, with peaks kept."""

import time
from collections import Counter

import pytest

from topologies import PRESETS, TopologyError, bisection_GBps, gpu_nodes, load_topology, validate_graph
from topologies.presets import DEFAULT_SIM, GENERATION_SIM, build_preset

GPUS = {"dgx-a100": 8, "dgx-h100": 8, "dgx-h200": 8, "a100-4gpu": 4, "pcie-8gpu": 8, "torus-3d": 64, "loopback": 8,
        "dgx-a100-80gb": 8, "dgx-b200": 8, "gb200-nvl72": 72, "dgx-2h": 16, "v100-4gpu": 4, "rtx5000-4gpu": 4}
GENERATION = {"dgx-h100": "hopper", "dgx-h200": "hopper", "dgx-b200": "blackwell", "gb200-nvl72": "blackwell",
              "dgx-2h": "volta", "v100-4gpu": "volta", "rtx5000-4gpu": "turing"}


def test_the_issue_s_presets_exist():
    assert set(PRESETS) == set(GPUS)


@pytest.mark.parametrize("name", sorted(GPUS))
def test_every_preset_builds_validates_and_documents_itself(name):
    G = load_topology(name)
    assert len(validate_graph(G)) == GPUS[name]
    assert G.graph["name"] == name and len(G.graph["notes"]) > 80
    # The hypothetical torus names no NCCL generation: its "servers" are single GPUs, no NCCL platform's.
    expected = {"loopback": {"collective_base_latency_us": 100.0, "gemm_efficiency": 0.5},
                "torus-3d": DEFAULT_SIM}.get(name) or GENERATION_SIM[GENERATION.get(name, "ampere")]
    assert G.graph["sim"] == expected
    if name != "loopback":
        assert G.graph["sim"]["collective_base_latency_us"] == 8.0
        for *_, data in G.edges(data=True):
            assert data["peak_bandwidth_GBps"] >= data["bandwidth_GBps"], "a model rate never beats its peak"


def rates(G, kind):
    return {(d["bandwidth_GBps"], d.get("peak_bandwidth_GBps")) for *_, d in G.edges(data=True) if d["kind"] == kind}


@pytest.mark.parametrize(
    "name, device, nvswitch, ib",
    [("dgx-a100", "A100-SXM4-40GB", (230.0, 300.0), (24.0, 25.0)),
     ("dgx-h100", "H100-SXM5-80GB", (370.0, 450.0), (47.0, 50.0)),
     ("dgx-h200", "H200-SXM-141GB", (370.0, 450.0), (47.0, 50.0)),
     ("dgx-a100-80gb", "A100-SXM4-80GB", (230.0, 300.0), (24.0, 25.0)),
     ("dgx-b200", "B200-180GB", (679.0, 900.0), (47.0, 50.0))],
)
def test_dgx_rates_effective_and_peak(name, device, nvswitch, ib):
    G = build_preset(f"{name}:2")
    assert rates(G, "nvswitch") == {nvswitch}
    assert ib in rates(G, "ib")
    assert {G.nodes[g]["device"]["name"] for g in gpu_nodes(G)} == {device}
    assert Counter(k for _, k in G.nodes(data="kind"))["nic"] == 16


def test_a100_4gpu_is_a_mesh_of_four_nvlink3_links_per_pair_with_four_nics():
    G = load_topology("a100-4gpu")
    ((model, peak),) = rates(G, "nvlink")
    assert model == pytest.approx(4 * 25 * 230 / 300) and peak == 100.0
    assert G.edges["gpu0", "gpu3"]["n_links"] == 4
    assert sum(1 for _, k in G.nodes(data="kind") if k == "nic") == 4


def test_device_specs_carry_dense_peaks():
    a100 = load_topology("dgx-a100").nodes["gpu0"]["device"]
    h200 = load_topology("dgx-h200").nodes["gpu0"]["device"]
    assert a100["peak_tflops"]["bfloat16"] == 312.0 and a100["peak_tflops"]["float64"] == 19.5
    assert a100["mem_bandwidth_GBps"] == 1555.0 and a100["memory_GB"] == 40.0
    assert h200["peak_tflops"]["bfloat16"] == 989.5 and h200["memory_GB"] == 141.0
    a100_80 = load_topology("dgx-a100-80gb").nodes["gpu0"]["device"]
    assert a100_80["peak_tflops"] == a100["peak_tflops"] and (a100_80["memory_GB"], a100_80["mem_bandwidth_GBps"]) \
        == (80.0, 2039.0)
    b200 = load_topology("dgx-b200").nodes["gpu0"]["device"]
    assert b200["peak_tflops"]["bfloat16"] == 2250.0 and b200["memory_GB"] == 180.0


def test_gb200_nvl72_is_one_nvlink_domain_of_72_with_a_nic_each():
    G = load_topology("gb200-nvl72:2")
    gpus = gpu_nodes(G)
    assert len(gpus) == 144 and {G.nodes[g]["server"] for g in gpus} == {0, 1}
    assert rates(G, "nvswitch") == {(679.0, 900.0)}
    assert Counter(k for _, k in G.nodes(data="kind"))["nic"] == 144 and Counter(
        k for _, k in G.nodes(data="kind"))["nvswitch"] == 2


@pytest.mark.parametrize("spec, gpus, servers", [("dgx-a100:16", 128, 16), ("a100-4gpu:16", 64, 16),
                                                 ("pcie-8gpu:3", 24, 3), ("dgx-h200:1", 8, 1), ("dgx-2h:32", 512, 32),
                                                 ("v100-4gpu:16", 64, 16), ("rtx5000-4gpu:16", 64, 16)])
def test_node_count_suffix_builds_a_cluster(spec, gpus, servers):
    G = load_topology(spec)
    assert G.graph["name"] == spec
    assert len(gpu_nodes(G)) == gpus
    assert {G.nodes[g]["server"] for g in gpu_nodes(G)} == set(range(servers))


def test_dgx_a100_cluster_bisection_is_half_the_nics():
    assert bisection_GBps(load_topology("dgx-a100:40")) == pytest.approx(20 * 8 * 24.0)


def test_other_suffixes():
    assert len(gpu_nodes(load_topology("loopback:3"))) == 3
    assert len(gpu_nodes(load_topology("torus-3d:2x3x4"))) == 24
    assert load_topology("torus-3d:2x3x4").graph["name"] == "torus-3d:2x3x4"


@pytest.mark.parametrize(
    "spec, match",
    [("dgx-z", r'unknown preset "dgx-z", known: dgx-a100, dgx-h100, .*loopback'),
     ("dgx-a100:0", "positive integer"), ("dgx-a100:x", "positive integer"), ("dgx-a100:", "empty suffix"),
     ("torus-3d:4x4", "shape like 4x4x8"), ("loopback:-2", "positive integer")],
)
def test_bad_preset_specs(spec, match):
    with pytest.raises(TopologyError, match=match):
        load_topology(spec)


def test_big_clusters_build_in_seconds():
    start = time.process_time()  # CPU time, which a loaded host does not stretch
    G = load_topology("dgx-h100:512")
    assert len(gpu_nodes(G)) == 4096
    assert time.process_time() - start < 5.0


def test_cluster_form_with_a_changed_fabric():
    preset = PRESETS["dgx-h100"]
    G = preset.cluster(64, oversubscription=2.0)
    assert G.graph["name"] == "dgx-h100:64" and "oversubscription=2.0" in G.graph["notes"]
    assert bisection_GBps(G) == pytest.approx(32 * 8 * 47.0 / 2)
    assert bisection_GBps(preset.cluster(64)) == pytest.approx(32 * 8 * 47.0)
    with pytest.raises(TopologyError, match="has no cluster form"):
        PRESETS["loopback"].cluster(2)


def kinds(G):
    return Counter(k for _, k in G.nodes(data="kind"))


def device(G):
    (name,) = {G.nodes[g]["device"]["name"] for g in gpu_nodes(G)}
    return name


def test_dgx_2h_is_16_v100_sxm3_on_nvswitch_with_a_nic_per_two_gpus():
    G = load_topology("dgx-2h:2")
    assert device(G) == "V100-SXM3-32GB" and kinds(G)["nic"] == 16
    assert rates(G, "nvswitch") == {(115.0, 150.0)} and rates(G, "ib") >= {(12.0, 12.5)}
    assert rates(G, "nic") == {(12.0, 15.75)}
    assert {G.nodes[nic]["rail"] for nic in G.successors("gpu2") if G.nodes[nic]["kind"] == "nic"} == {1}
    gpu = G.nodes["gpu0"]["device"]
    assert gpu["peak_tflops"]["float16"] == 131.25 and (gpu["memory_GB"], gpu["mem_bandwidth_GBps"]) == (32.0, 900.0)


def test_dgx_2h_32_is_megatron_lm_s_512_gpus_on_an_edr_fat_tree():
    G = load_topology("dgx-2h:32")
    assert len(gpu_nodes(G)) == 512 and kinds(G)["nic"] == 256
    # 18-port leaves: 2 leaves per rail for 32 servers, 8 rails.
    assert kinds(G)["leaf"] == 16
    assert bisection_GBps(G) == pytest.approx(16 * 8 * 12.0)


def test_v100_4gpu_is_an_ac922_two_nvlinked_pairs_on_two_sockets():
    G = load_topology("v100-4gpu")
    assert device(G) == "V100-SXM2-16GB" and kinds(G) == {"cpu": 2, "gpu": 4, "nic": 2}
    ((model, peak),) = rates(G, "nvlink")
    assert model == pytest.approx(3 * 25 * 230 / 300) and peak == 75.0
    assert G.edges["gpu0", "gpu1"]["n_links"] == 3 and G.edges["gpu2", "n0/cpu1"]["n_links"] == 3
    assert not G.has_edge("gpu0", "gpu2") and not G.has_edge("gpu1", "n0/cpu1")
    assert rates(G, "smp") == {(32.0, 64.0)}
    assert {nic: next(iter(G.successors(nic))) for nic in ("n0/nic0", "n0/nic1")} == {"n0/nic0": "n0/cpu0",
                                                                                      "n0/nic1": "n0/cpu1"}
    # Across the sockets the X-bus is the cut.
    assert bisection_GBps(G) == pytest.approx(32.0)
    assert rates(load_topology("v100-4gpu:2"), "ib") >= {(12.0, 12.5)}


def test_rtx5000_4gpu_is_a_pcie_gen3_frontera_node_with_one_fdr_nic():
    G = load_topology("rtx5000-4gpu:2")
    assert device(G) == "Quadro-RTX-5000-16GB" and kinds(G)["nic"] == 2 and kinds(G)["pcie_switch"] == 4
    assert rates(G, "pcie") == {(12.0, 15.75)} and rates(G, "ib") == {(6.5, 6.8)}
    assert not rates(G, "nvlink") and not rates(G, "nvswitch")
    gpu = G.nodes["gpu0"]["device"]
    assert gpu["peak_tflops"] == {"float64": 0.35, "float32": 11.2, "bfloat16": 11.2, "float16": 89.2}
    assert (gpu["memory_GB"], gpu["mem_bandwidth_GBps"]) == (16.0, 448.0)


@pytest.mark.parametrize("name", ["dgx-2h", "v100-4gpu", "rtx5000-4gpu"])
def test_the_paper_presets_say_which_figures_are_assumptions(name):
    notes = PRESETS[name].notes
    assert "peak" in notes and "modelled" in notes and "assumption" in notes
