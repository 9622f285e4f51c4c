"""Drawing: labels tell servers apart; the PNG itself is checked in test_command."""

import pytest

from topologies.draw import node_labels
from topologies.presets import build_preset


@pytest.mark.parametrize("spec", ["dgx-a100:2", "pcie-8gpu:2", "a100-4gpu:3"])
def test_labels_of_a_cluster_are_unique_and_keep_the_server(spec):
    labels = node_labels(build_preset(spec))
    assert len(set(labels.values())) == len(labels)
    assert labels["n1/nic0"] == "n1/nic0" and labels["gpu5"] == "gpu5" and labels["leaf0"] == "leaf0"


def test_a_lone_server_drops_the_prefix():
    labels = node_labels(build_preset("dgx-a100"))
    assert labels["n0/nvswitch"] == "nvswitch" and labels["n0/nic7"] == "nic7"
    assert len(set(labels.values())) == len(labels)


TEX = "bad$\\frac{$"
"""A name matplotlib would parse as TeX (mathtext) and fail on: it must be drawn as the plain text it is."""


@pytest.mark.parametrize("command", [["topology", "show", "{file}", "--png", "{png}"],
                                     ["predict", "--gpus", "2", "--topology", "{file}", "--workload", "gemm", "--m",
                                      "8", "--k", "8", "--n", "8", "--algos", "1d", "--png", "{png}"]],
                         ids=["topology-show", "predict"])
def test_a_name_with_tex_characters_is_drawn_as_text(tmp_path, capsys, command):
    from tests.cli_run import run
    from topologies.loader import save_topology

    G = build_preset("loopback:2")
    G.graph["name"] = TEX
    save_topology(G, str(tmp_path / "t.yaml"))
    png = tmp_path / "out.png"
    status, _, err = run(capsys, *[a.format(file=tmp_path / "t.yaml", png=png) for a in command])
    assert status == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
