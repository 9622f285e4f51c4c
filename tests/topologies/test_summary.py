"""What ``tpsim topology show`` counts: injection only over capacity that reaches another GPU."""

import pytest

from topologies.builders import nvswitch_node, pcie_tree
from topologies.presets import build_preset
from topologies.summary import injection_by_kind_GBps, summarize


@pytest.mark.parametrize(
    "spec, parts",
    [("dgx-a100", {"nvswitch": 230.0}),  # the 8 NICs lead nowhere on a lone server
     ("dgx-a100:2", {"nvswitch": 230.0, "nic": 24.0}),  # the NIC term is the HDR rate, not the 25 GB/s attach
     ("a100-4gpu", {"nvlink": 3 * 4 * 230.0 / 12}),
     ("a100-4gpu:2", {"nvlink": 3 * 4 * 230.0 / 12, "nic": 24.0}),
     ("dgx-h100:2", {"nvswitch": 370.0, "nic": 47.0}),
     ("pcie-8gpu", {"pcie": 25.0})],
)
def test_injection_counts_only_what_reaches_another_gpu(spec, parts):
    G = build_preset(spec)
    summary = summarize(G, bisection=False)
    assert summary["injection_by_kind_GBps"] == pytest.approx(parts)
    assert summary["injection_GBps"] == summary["injection_max_GBps"] == pytest.approx(sum(parts.values()))
    for gpu in ("gpu0", f"gpu{summary['gpus'] - 1}"):
        assert injection_by_kind_GBps(G, gpu) == pytest.approx(parts)


def test_a_gpu_edge_is_capped_by_what_leaves_its_far_end():
    # One GPU per PCIe switch: nothing but the 12 GB/s host uplink leads on from gpu0's 25 GB/s edge.
    from topologies.links import LinkSpec

    G = pcie_tree(4, 1, uplink=LinkSpec("pcie", 12.0, 0.5))
    assert injection_by_kind_GBps(G, "gpu0") == {"pcie": 12.0}
    # A NIC hanging off the switch adds nothing onward: still 12.
    assert injection_by_kind_GBps(pcie_tree(4, 1, nics=4, uplink=LinkSpec("pcie", 12.0, 0.5)), "gpu0") == {"pcie": 12.0}


def test_a_lone_gpu_injects_nothing():
    summary = summarize(nvswitch_node(1, nics=1))
    assert summary["injection_GBps"] == 0 and summary["injection_by_kind_GBps"] == {}
    assert summary["bisection_GBps"] is None and summary["bisection_cuts"] == []
