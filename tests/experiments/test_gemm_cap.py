"""experiments.gemm_cap: the capped preset graph, named, filed and in the place of every preset, and undone."""

from __future__ import annotations

import pytest

import topologies.loader
import topologies.presets
from experiments import block_time
from experiments.gemm_cap import capped_file, capped_graph, capped_preset, presets_capped
from topologies import load_topology

SPEC = "dgx-a100:1"


def _sim(G) -> dict:
    return G.graph.get("sim", {})


def test_the_capped_graph_is_the_preset_with_only_its_gemm_efficiency_set():
    preset, capped = topologies.presets.build_preset(SPEC), capped_graph(SPEC, 0.6)
    assert _sim(capped) == {**_sim(preset), "gemm_efficiency": 0.6}
    assert sorted(capped.edges(data=True)) == sorted(preset.edges(data=True))
    assert "gemm_efficiency" not in _sim(topologies.presets.build_preset(SPEC))  # the preset itself untouched


def test_a_capped_preset_is_registered_under_its_own_name():
    name = capped_preset(SPEC, 0.55)
    assert name == f"{SPEC}+gemm0.55"
    G, _router = block_time.topology(name)
    assert _sim(G)["gemm_efficiency"] == 0.55 and "gemm_efficiency" not in _sim(block_time.topology(SPEC)[0])


def test_a_capped_file_loads_back_capped_and_is_written_once(tmp_path):
    path = capped_file(SPEC, 0.7, str(tmp_path))
    assert path == str(tmp_path / "dgx-a100-1-gemm0.7.yaml")
    assert _sim(load_topology(path))["gemm_efficiency"] == 0.7
    written = (tmp_path / "dgx-a100-1-gemm0.7.yaml").stat().st_mtime_ns
    assert capped_file(SPEC, 0.7, str(tmp_path)) == path
    assert (tmp_path / "dgx-a100-1-gemm0.7.yaml").stat().st_mtime_ns == written


def test_presets_capped_caps_every_preset_spec_inside_the_block_and_restores_after():
    own = topologies.presets.build_preset, topologies.loader.build_preset
    with presets_capped(0.65):
        assert _sim(topologies.presets.build_preset(SPEC))["gemm_efficiency"] == 0.65
        assert _sim(load_topology(SPEC))["gemm_efficiency"] == 0.65  # the loader resolves presets through it
    assert (topologies.presets.build_preset, topologies.loader.build_preset) == own
    assert "gemm_efficiency" not in _sim(load_topology(SPEC))


def test_presets_capped_caps_a_cluster_described_from_a_server_preset_too():
    described = "server=dgx-a100-80gb,servers=2,nics=4,nic_Gbps=100"
    own = topologies.loader.compact_cluster
    with presets_capped(0.7):
        assert _sim(load_topology(described))["gemm_efficiency"] == 0.7
    assert topologies.loader.compact_cluster is own
    assert "gemm_efficiency" not in _sim(load_topology(described))


def test_presets_capped_restores_after_an_error():
    own = topologies.presets.build_preset
    with pytest.raises(RuntimeError, match="inside"):
        with presets_capped(0.5):
            raise RuntimeError("inside")
    assert topologies.presets.build_preset is own
