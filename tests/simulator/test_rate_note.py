"""The note under a training plan whose GPU's GEMM rate is a best case or an assumption (simulator.training.rate_note)."""

from topologies import gpu_nodes
from topologies.presets import build_preset

from simulator.training.rate_note import gemm_rate_note


def _note(spec: str, sim: dict | None = None, **device):
    G = build_preset(spec)
    if sim is not None:
        G.graph["sim"] = {**(G.graph.get("sim") or {}), **sim}
    d = {**G.nodes[gpu_nodes(G)[0]]["device"], **device}
    return gemm_rate_note(G, d)


def test_best_case_gpus_get_the_note_and_the_a100_does_not():
    for spec, name, rate in (("dgx-h100:1", "H100-SXM5-80GB", "794.5"), ("dgx-b200:1", "B200-180GB", "1745")):
        note = _note(spec)
        assert note.startswith(f"{name}'s GEMM rate is a best case ({rate} TFLOP/s bf16, no sustained rate published)")
        assert "tpsim calibrate --from-steps" in note
    assert _note("dgx-a100:1") is None and _note("dgx-a100-80gb:1") is None  # sustained rates
    assert "(1402.6 TFLOP/s fp8, no sustained rate published)" in _note("dgx-h100:1", sim={"fp8_gemms": True})


def test_an_assumed_rate_says_so_and_the_users_own_rate_gets_no_note():
    assert _note("dgx-2h:1").startswith("V100-SXM3-32GB has no published GEMM rate (70% of peak assumed)")
    assert _note("dgx-h100:1", sim={"gemm_efficiency": 0.6}) is None  # calibrated or set by hand
    assert _note("dgx-h100:1", gemm_tflops={"bfloat16": 650.0}) is None  # the device's own figure
    assert _note("dgx-2h:1", gemm_tflops={"bfloat16": 100.0}) is None


def test_the_plan_prints_it_under_the_table_and_json_does_not(capsys):
    from simulator.cli import main

    base = ["predict", "--gpus", "8", "--workload", "transformer", "--seq", "1024", "--hidden", "1024", "--heads",
            "16", "--layers", "2", "--global-batch", "8", "--tp-sizes", "8", "--algos", "1d", "--simulate-top", "1"]
    assert main(base + ["--topology", "dgx-h100"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("  note: H100-SXM5-80GB's GEMM rate is a best case")
    assert main(base + ["--topology", "dgx-h100", "--json"]) == 0
    assert "best case" not in capsys.readouterr().out
    assert main(base + ["--topology", "dgx-a100"]) == 0
    assert "best case" not in capsys.readouterr().out
