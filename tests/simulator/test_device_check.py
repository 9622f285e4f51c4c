"""A log compared or fitted on a topology of another GPU kind gets one note saying so, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibrate.device_check import device_note, gpu_family
from simulator.cli import main
from topologies import load_topology

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
A100_LOG = DATA / "azure-ndv4-a100" / "all_reduce_perf_8gpu.log"


@pytest.mark.parametrize("name, family", [
    ("A100-SXM4-40GB", "A100"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA H200", "H200"), ("NVIDIA B200", "B200"), ("NVIDIA GB200", "GB200"), ("Tesla V100-SXM2-32GB", "V100"),
    ("Quadro RTX 5000", None), ("CPU core", None),
])
def test_gpu_family_from_device_names_as_nccl_tests_and_the_presets_print_them(name, family):
    assert gpu_family(name) == family


def test_a_note_only_where_both_name_a_family_and_they_differ():
    h100, a100_80 = load_topology("dgx-h100"), load_topology("dgx-a100-80gb")
    assert "ran on A100-SXM4-40GB; dgx-h100's GPUs are H100-SXM5-80GB" in device_note("x.log", "A100-SXM4-40GB", h100)
    assert device_note("x.log", "A100-SXM4-40GB", a100_80) is None  # one family: the same links
    assert device_note("x.log", None, h100) is None  # a log copied from a web page names no device
    assert device_note("x.log", "A100-SXM4-40GB", load_topology("loopback:8")) is None  # CPU ranks: no GPU kind


def test_compare_on_another_gpu_kind_prints_the_table_and_one_note(capsys):
    assert main(["collective", "--compare", str(A100_LOG), "--topology", "dgx-h100"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# all_reduce on 8 ranks of dgx-h100") and len(err.splitlines()) == 1
    assert err.startswith("note: all_reduce_perf_8gpu.log ran on A100-SXM4-40GB; dgx-h100's GPUs are")
    assert main(["collective", "--compare", str(A100_LOG), "--topology", "dgx-a100"]) == 0
    assert capsys.readouterr().err == ""


def test_calibrate_on_another_gpu_kind_says_so(tmp_path, capsys):
    out = tmp_path / "fit.yaml"
    assert main(["calibrate", "--from-nccl-tests", str(A100_LOG), "--topology", "dgx-h100", "-o", str(out)]) == 0
    assert "note: all_reduce_perf_8gpu.log ran on A100-SXM4-40GB; dgx-h100's GPUs" in capsys.readouterr().out
