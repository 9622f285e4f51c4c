"""Fitting samples the simulator itself made from known parameters recovers those parameters.

The samples are flow-simulated (``simulate_buckets``, as ``tpsim collective`` runs them) on a
topology whose knobs were set to known values; ``calibrate`` starts from the unchanged preset.
"""

import math

import pytest

from simulator.calibrate import CollectiveSample, GemmSample
from simulator.calibrate.fit import calibrate, simulate_buckets
from simulator.calibrate.holdout import nothing
from simulator.calibrate.knobs import apply_values, collective_knobs
from simulator.compute import ComputeConfig, ComputeModel
from topologies import gpu_nodes, load_topology

SIZES = [8 << (2 * k) for k in range(14)]  # 8 B .. 512 MiB, factor 4


def _truth(spec: str, kinds: list[str], truth: dict, protocol: str | None = None, collective_kinds=()):
    base = load_topology(spec)
    if protocol:
        base.graph["sim"]["collective_protocol"] = protocol
    knobs = collective_knobs(base, kinds, collective_kinds=collective_kinds)
    return base, apply_values(base, knobs, [truth[k.name] for k in knobs])


def _samples(G, keys) -> list[CollectiveSample]:
    return [CollectiveSample(kind, ranks, nbytes, t, "synthetic") for (kind, ranks, nbytes), t
            in zip(keys, simulate_buckets(G, keys))]


def _assert_close(found: dict, truth: dict, rel: float) -> None:
    off = {name: f"{found[name]:.4g} vs {value:.4g}" for name, value in truth.items()
           if not math.isclose(found[name], value, rel_tol=rel)}
    assert not off, f"not recovered within {rel:.0%}: {off}"


def test_nvswitch_all_reduce_parameters_are_recovered():
    truth = {"nvswitch.bandwidth_scale": 0.87, "nvswitch.latency_us": 0.6, "collective_base_latency_us": 11.0,
             "collective_startup_bytes": 2 << 20, "collective_channel_bandwidth_GBps": 31.0}
    base, true_graph = _truth("dgx-a100", ["nvswitch"], truth)
    keys = [("all_reduce", n, s) for n in (2, 4, 8) for s in SIZES]  # every regime, from 8 B (factor 2: 9.1 -> 6.9 s)
    cal = calibrate(base, _samples(true_graph, keys), [], holdout=nothing)
    _assert_close(cal.parameters, truth, 0.02)
    assert max(abs(r.rel_error) for r in cal.fit_rows) < 1e-3


def test_loopback_parameters_are_recovered_from_every_kind_of_collective():
    truth = {"loopback.bandwidth_scale": 0.4, "loopback.latency_us": 35.0, "collective_base_latency_us": 60.0,
             "collective_startup_bytes": 256 << 10, "collective_channel_bandwidth_GBps": 1.5}
    base, true_graph = _truth("loopback:4", ["loopback"], truth, protocol="simple")
    kinds = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
    keys = [(k, n, s) for k in kinds for n in (2, 4) for s in SIZES[:12]] + [("send", 2, s) for s in SIZES[:12]]
    cal = calibrate(base, _samples(true_graph, keys), [], holdout=nothing, protocol="simple")
    _assert_close(cal.parameters, truth, 0.02)
    assert cal.graph.graph["sim"]["collective_protocol"] == "simple"
    # The kinds' own factors stay at 1 where every kind costs what its algorithm does.
    factors = {name: v for name, v in cal.parameters.items() if name.startswith("kind_factor.")}
    assert len(factors) == 5 and all(v == pytest.approx(1.0, rel=0.02) for v in factors.values()), factors


def test_a_bytes_factor_per_collective_kind_is_recovered_beside_the_link_rates():
    """gloo-like: broadcast costs half what its chain moves, send 1.6x its message; all_reduce (most
    buckets) is the reference."""
    truth = {"loopback.bandwidth_scale": 0.4, "loopback.latency_us": 35.0, "collective_base_latency_us": 60.0,
             "collective_startup_bytes": 256 << 10, "collective_channel_bandwidth_GBps": 1.5,
             "kind_factor.broadcast": 0.5, "kind_factor.send": 1.6}
    base, true_graph = _truth("loopback:4", ["loopback"], truth, protocol="simple",
                              collective_kinds=["all_reduce", "broadcast", "send"])
    keys = [("all_reduce", n, s) for n in (2, 3, 4) for s in SIZES[:12]]
    keys += [("broadcast", n, s) for n in (2, 4) for s in SIZES[:12]] + [("send", 2, s) for s in SIZES[:12]]
    cal = calibrate(base, _samples(true_graph, keys), [], holdout=nothing, protocol="simple")
    _assert_close(cal.parameters, truth, 0.02)
    assert cal.graph.graph["sim"]["collective_kind_bytes_factors"] == pytest.approx({"broadcast": 0.5, "send": 1.6},
                                                                                     rel=0.02)
    assert max(abs(r.rel_error) for r in cal.fit_rows) < 1e-3
    # Recalibrating a calibrated file: the fit starts from its factors and finds them again.
    again = calibrate(cal.graph, _samples(true_graph, keys), [], holdout=nothing, protocol="simple")
    _assert_close(again.parameters, {**truth, "loopback.bandwidth_scale": 1.0}, 0.02)  # its rates are fitted
    # One set of rates for every kind cannot fit them.
    plain = calibrate(base, _samples(true_graph, keys), [], holdout=nothing, protocol="simple", kind_factors=False)
    assert not any(name.startswith("kind_factor.") for name in plain.parameters)
    assert max(abs(r.rel_error) for r in plain.fit_rows) > 0.1


def test_gemm_efficiency_and_half_dim_are_recovered():
    G = load_topology("dgx-a100")
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    model = ComputeModel(ComputeConfig(gemm_efficiency=0.62, half_efficiency_dim=96.0))
    shapes = [(m, k, n) for m in (64, 512, 4096) for k in (128, 4096) for n in (32, 1024, 8192)]
    gemms = [GemmSample(m, k, n, "bfloat16", model.gemm_time_s(device, "bfloat16", m, k, n), 8,
                        source="synthetic")
             for m, k, n in shapes]
    cal = calibrate(G, [], gemms)
    _assert_close(cal.parameters, {"gemm_efficiency": 0.62, "half_efficiency_dim": 96.0}, 0.02)
    assert cal.graph.graph["sim"]["gemm_efficiency"] == pytest.approx(0.62, rel=0.02)
    assert all(r.fitted and abs(r.rel_error) < 1e-3 for r in cal.gemm_rows)


def test_gemms_at_lower_concurrency_are_shown_not_fitted_and_a_slow_listed_peak_is_raised():
    G = load_topology("loopback:4")
    fast = 2.0 * 256 ** 3 / 0.8e12  # 0.8 TFLOP/s alone, 0.2 under 4 ranks: twice the listed 0.096
    gemms = [GemmSample(256, 256, 256, "float32", fast, 1), GemmSample(256, 256, 256, "float32", 4 * fast, 4)]
    cal = calibrate(G, [], gemms)
    assert [r.fitted for r in cal.gemm_rows] == [False, True]
    assert abs(cal.gemm_rows[1].rel_error) < 0.01
    assert cal.parameters["peak_tflops.float32"] == pytest.approx(0.2 * (256 + 64) / 256)  # thin factor at h = 64
    assert all(G.nodes[g]["device"]["peak_tflops"]["float32"] == 0.096 for g in gpu_nodes(G))  # base untouched
    assert "raised" in cal.graph.graph["notes"]


def test_the_gemm_rate_after_a_collective_is_recovered_next_to_the_lock_step_one():
    G = load_topology("loopback:4")
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    truth = ComputeModel(ComputeConfig(gemm_efficiency=0.3, half_efficiency_dim=80.0, gemm_efficiency_after_comm=0.5))
    shapes = [(512, 512, 512), (1024, 256, 1024), (1024, 1024, 256), (128, 512, 512)]
    gemms = [GemmSample(m, k, n, "float32", truth.gemm_time_s(device, "float32", m, k, n, after_comm=after), 4,
                        after_comm=after) for m, k, n in shapes for after in (False, True)]
    cal = calibrate(G, [], gemms)
    _assert_close(cal.parameters, {"gemm_efficiency": 0.3, "half_efficiency_dim": 80.0,
                                   "gemm_efficiency_after_comm": 0.5}, 0.02)
    assert all(r.fitted and abs(r.rel_error) < 1e-3 for r in cal.gemm_rows)
    assert {r.after_comm for r in cal.gemm_rows} == {False, True}
    # After-collective samples alone: they set gemm_efficiency, and the notes say every gemm runs at it.
    alone = calibrate(G, [], [g for g in gemms if g.after_comm])
    assert alone.parameters["gemm_efficiency"] == pytest.approx(0.5, rel=0.02)
    assert "gemm_efficiency_after_comm" not in alone.parameters
    assert "no lock-step gemm rows" in alone.graph.graph["notes"]


def _h200_gemms_fitted(truth: ComputeConfig, shapes):
    """``calibrate`` of dgx-h200 on bfloat16 gemms timed by ``truth``'s model: the base graph and the result."""
    G = load_topology("dgx-h200")
    device = G.nodes[gpu_nodes(G)[0]]["device"]
    model = ComputeModel(truth)
    return G, calibrate(G, [], [GemmSample(m, k, n, "bfloat16", model.gemm_time_s(device, "bfloat16", m, k, n))
                               for m, k, n in shapes])


def test_gemms_alone_report_the_base_values_they_moved_from():
    # Without collectives the fitted graph is the base's copy itself: its base values must be read first.
    G, cal = _h200_gemms_fitted(ComputeConfig(gemm_efficiency=0.45, half_efficiency_dim=150.0),
                                [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 128)])
    # The preset sets no cap: its base is the H200's own, from its published achievable matmul rate.
    base = ComputeModel(ComputeConfig.from_sim(G.graph["sim"])).cap(G.nodes[gpu_nodes(G)[0]]["device"], "bfloat16")
    assert cal.base_parameters["gemm_efficiency"] == base != cal.parameters["gemm_efficiency"]
    assert cal.parameters["gemm_efficiency"] == pytest.approx(0.45, rel=0.02)


def test_gemms_far_slower_than_the_memory_roof_still_move_the_fit():
    # At the base values these shapes sit on the H200's memory roof, where the model has no slope: the
    # fit starts from the cap the measured rates imply instead of stopping where it began.
    _, cal = _h200_gemms_fitted(ComputeConfig(gemm_efficiency=0.002, half_efficiency_dim=64.0),
                                [(128, 128, 128), (256, 256, 256), (512, 256, 128), (256, 128, 256)])
    assert cal.parameters["gemm_efficiency"] == pytest.approx(0.002, rel=0.05)
    assert all(abs(r.rel_error) < 0.05 for r in cal.gemm_rows)
