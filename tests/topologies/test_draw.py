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
