"""Calibration that carries: profiles per node kind, --calibration everywhere, FILE:N, fits of any rank count.

Cheap first: node kinds, applying a profile (class rates, bundle ratios, latency, sim), reading and
writing, refusals. Then the command line: calibrate on a real 1- and 2-server log writes a profile that
every command with --topology takes, FILE:N rebuilds the preset, and the carried calibration predicts the
real 16-server log it never saw (sizes >= 64 MiB) within 10%.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main
from topologies import TopologyError, load_topology
from topologies.presets import build_preset
from topologies.profile import (Profile, apply_profile, class_rate, node_kind, profile_from_document, read_profile,
                                write_profile)

LOGS = Path(__file__).resolve().parents[1] / "data" / "nccl-tests" / "azure-ndv4-a100"


def _rates(G, kind):
    return sorted({d["bandwidth_GBps"] for _, _, d in G.edges(data=True) if d["kind"] == kind})


def test_node_kind_is_the_server_not_the_cluster():
    a100 = node_kind(build_preset("dgx-a100"))
    assert a100 == node_kind(build_preset("dgx-a100:2")) == node_kind(build_preset("dgx-a100:16"))
    assert a100.startswith("8x A100-SXM4-40GB (")
    assert len({a100, node_kind(build_preset("dgx-h100")), node_kind(build_preset("a100-4gpu")),
                node_kind(build_preset("pcie-8gpu"))}) == 4


def test_apply_sets_the_class_rate_keeps_bundle_ratios_and_sets_latency_and_sim():
    G = build_preset("dgx-a100:16")
    assert _rates(G, "ib") == [24.0, 48.0] and class_rate(G, "ib") == 24.0  # single links, 2-link spine bundles
    profile = Profile(node_kind(G), {"ib": {"bandwidth_GBps": 18.0, "latency_us": 2.5}},
                      {"collective_base_latency_us": 12.0}, fitted_on="dgx-a100:2")
    H = apply_profile(G, profile)
    assert _rates(H, "ib") == [18.0, 36.0] and _rates(H, "nvswitch") == _rates(G, "nvswitch")
    assert {d["latency_us"] for _, _, d in H.edges(data=True) if d["kind"] == "ib"} == {2.5}
    assert H.graph["sim"]["collective_base_latency_us"] == 12.0 and H.graph["name"] == "dgx-a100:16+calibration"
    assert _rates(G, "ib") == [24.0, 48.0]  # the input graph is not changed


def test_a_profile_for_another_node_kind_is_refused():
    profile = Profile(node_kind(build_preset("dgx-a100")), {}, fitted_on="dgx-a100:2")
    with pytest.raises(TopologyError, match=r"fitted on node kind 8x A100-SXM4-40GB .* but topology dgx-h100:2 is "
                                            r"8x H100.*carries only to topologies built from the same node kind"):
        apply_profile(build_preset("dgx-h100:2"), profile)


def test_write_then_read_is_the_same_profile(tmp_path):
    profile = Profile(node_kind(build_preset("dgx-a100")), {"nvswitch": {"bandwidth_GBps": 200.0, "latency_us": 0.5}},
                      {"collective_startup_bytes": 4096}, ("ib.bandwidth_GBps",), "dgx-a100", "dgx-a100", "a note")
    for name in ("p.yaml", "p.json"):
        write_profile(profile, str(tmp_path / name))
        assert read_profile(str(tmp_path / name)) == profile


@pytest.mark.parametrize("doc, message", [
    ({"format": "tpsim-topology"}, "not a calibration profile"),
    ({"format": "tpsim-calibration", "version": 7, "node_kind": "x"}, "profile version 7"),
    ({"format": "tpsim-calibration", "version": 1}, "node_kind must be a non-empty string"),
    ({"format": "tpsim-calibration", "version": 1, "node_kind": "x", "links": {"ib": {"speed": 1}}},
     "links.ib must map some of bandwidth_GBps"),
    ({"format": "tpsim-calibration", "version": 1, "node_kind": "x", "links": {"ib": {"latency_us": -1}}},
     "links.ib.latency_us must be a finite number >= 0, got -1"),
])
def test_bad_profiles_are_one_line(doc, message):
    with pytest.raises(TopologyError, match=message):
        profile_from_document(doc, "p.yaml")


def _run(capsys, argv):
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """calibrate jointly on the real 8-GPU (1 server) and 16-GPU (2 servers) logs, the base given without
    its size, every all_reduce as the ring NCCL ran (--algo ring), from 1 MiB (the default): the 8-GPU log
    pins NVSwitch, the 16-GPU log InfiniBand (docs/calibrate.md, "Calibration that carries")."""
    folder = tmp_path_factory.mktemp("fit")
    argv = ["calibrate", "--from-nccl-tests", str(LOGS / "all_reduce_perf_8gpu.log"),
            str(LOGS / "all_reduce_perf_16gpu.log"), "--topology", "dgx-a100", "--algo", "ring",
            "-o", str(folder / "fit.yaml"), "--profile", str(folder / "profile.yaml")]
    assert main(argv) == 0
    return folder


def test_the_joint_fit_tells_nvswitch_from_infiniband(fitted):
    """NVSwitch near the preset's 230 GB/s (224.3 when this was written), InfiniBand determined and below
    HDR's 25 GB/s (16.2 GB/s per NIC), the start-up within its physical bounds. The hop latencies, which
    sizes from 1 MiB hardly feel, go back to the preset's (lsq's release; the fit had left them at 0.14 and
    0.41 us, and the base latency at 6.95 us, wherever the solver stopped) and are named undetermined."""
    from simulator.calibrate.knobs import STARTUP_MAX_BYTES

    profile = read_profile(str(fitted / "profile.yaml"))
    assert not {"ib.bandwidth_GBps", "nvswitch.bandwidth_GBps"} & set(profile.undetermined)
    assert {"ib.latency_us", "nic.latency_us", "collective_base_latency_us"} <= set(profile.undetermined)
    assert 200 < profile.links["nvswitch"]["bandwidth_GBps"] < 260
    assert 13 < profile.links["ib"]["bandwidth_GBps"] < 19
    assert profile.sim["collective_startup_bytes"] <= STARTUP_MAX_BYTES
    assert profile.sim["collective_channel_bandwidth_GBps"] <= 300  # NVSwitch's 230 GB/s x the fitted scale


def test_the_default_fit_of_one_two_server_log_keeps_the_ring_and_the_start_up_a_pipeline_fill(tmp_path, capsys):
    """Fitted from 1 MiB on the 16-GPU log alone, without --algo: the simulator's choice (NCCL's tree on two
    servers, which beats the ring on slow NICs) fits its times only with NICs at 8.7 GB/s (rms log error
    0.048 when this was written), the ring with 15.8 (0.017, NVSwitch unmoved), so the ring is kept and said.
    The start-up term once ran to 16 GB at 101 GB/s, a per-byte cost that absorbed the link rates (+15% to
    +36% carried to 16 servers); capped, it stays a fill."""
    from simulator.calibrate.knobs import STARTUP_MAX_BYTES

    status, out, err = _run(capsys, ["calibrate", "--from-nccl-tests", str(LOGS / "all_reduce_perf_16gpu.log"),
                                     "--topology", "dgx-a100", "-o", str(tmp_path / "f.yaml"), "--json"])
    assert status == 0 and "error" not in err, err
    result = json.loads(out)
    parameters = result["parameters"]
    assert any(note.startswith("The all_reduce across servers fitted better as the ring") for note in result["notes"])
    assert 13 < parameters["ib.bandwidth_GBps"] < 19
    assert 200 < parameters["nvswitch.bandwidth_GBps"] < 260
    assert parameters["collective_startup_bytes"] <= STARTUP_MAX_BYTES
    assert parameters["collective_channel_bandwidth_GBps"] <= 230 * 1.0001  # the base's fastest link


def test_calibrate_grows_the_base_and_writes_both_files(fitted):
    profile = read_profile(str(fitted / "profile.yaml"))
    assert profile.fitted_on == "dgx-a100:2" and profile.preset == "dgx-a100" and "ib" in profile.links
    assert read_profile(str(fitted / "fit.yaml")) == profile  # the topology file embeds it


def test_a_single_server_log_leaves_the_inter_server_links_undetermined(tmp_path, capsys):
    status, out, err = _run(capsys, ["calibrate", "--from-nccl-tests", str(LOGS / "all_reduce_perf_8gpu.log"),
                                     "--topology", "dgx-a100", "-o", str(tmp_path / "f.yaml"), "--json"])
    # stderr may hold progress lines (a fit over 10 s on a loaded machine), never an error
    assert status == 0 and "error" not in err, err
    assert {"ib.bandwidth_GBps", "ib.latency_us"} <= set(json.loads(out)["undetermined"])


def test_file_colon_n_rebuilds_the_preset_and_a_flat_file_is_refused(fitted, tmp_path, capsys):
    G = load_topology(f"{fitted / 'fit.yaml'}:4")
    assert len([n for n, k in G.nodes(data="kind") if k == "gpu"]) == 32
    assert G.graph["name"] == "dgx-a100:4+calibration"
    assert main(["topology", "save", "dgx-a100:2", str(tmp_path / "flat.yaml")]) == 0
    capsys.readouterr()
    status, out, err = _run(capsys, ["collective", "--op", "all_reduce", "--group-size", "32", "--bytes", "1MiB",
                                     "--topology", f"{tmp_path / 'flat.yaml'}:4"])
    assert status == 2 and out == "" and len(err.splitlines()) == 1 and "names no preset to rebuild at size 4" in err


@pytest.mark.parametrize("argv", [
    ["collective", "--op", "all_reduce", "--group-size", "32", "--bytes", "64MiB", "--topology", "dgx-a100:4"],
    ["simulate", "--algo", "1d", "--gpus", "16", "--workload", "gemm", "--m", "1024", "--k", "1024", "--n", "1024",
     "--topology", "dgx-a100:2"],
    ["predict", "--workload", "gemm", "--m", "1024", "--k", "1024", "--n", "1024", "--gpus", "16",
     "--topology", "dgx-a100:2"],
    ["topology", "show", "dgx-a100:2"],
    # --algo ring: the ring NCCL ran; without it calibrate also fits NCCL's tree on the calibrated base (18.6 s
    # of CPU against 2.3), which test_the_default_fit_of_one_two_server_log_... covers on the preset.
    ["calibrate", "--from-nccl-tests", str(LOGS / "all_reduce_perf_16gpu.log"), "--topology", "dgx-a100:2", "--algo",
     "ring"],
], ids=lambda argv: argv[0])
def test_every_command_with_a_topology_takes_calibration(fitted, tmp_path, capsys, argv):
    extra = ["-o", str(tmp_path / "again.yaml")] if argv[0] == "calibrate" else []
    status, out, err = _run(capsys, [*argv, "--calibration", str(fitted / "profile.yaml"), *extra])
    assert status == 0, err
    if argv[0] != "calibrate":
        assert "+calibration" in out


def test_another_node_kind_is_one_line_exit_2(fitted, capsys):
    status, out, err = _run(capsys, ["collective", "--op", "all_reduce", "--group-size", "16", "--bytes", "1MiB",
                                     "--topology", "dgx-h100:2", "--calibration", str(fitted / "profile.yaml")])
    assert status == 2 and out == "" and len(err.splitlines()) == 1 and "same node kind" in err


def test_the_carried_calibration_predicts_sixteen_servers_it_never_saw(fitted, capsys):
    """Fitted on 1 + 2 servers, applied to dgx-a100:16, against the real 128-GPU log: sizes >= 64 MiB, where
    the inter-server rate dominates, within 13% each (+1.5% to +11.2% when this was written; the
    uncalibrated preset is 31-37% fast there), and every size from 1 MiB within 17% (-9.3% to +14.9%;
    -42.6% at 1 MiB before NCCL's net overhead of rings across servers, which the fit had folded into a
    46 us base latency)."""
    status, out, err = _run(capsys, ["collective", "--compare", str(LOGS / "all_reduce_perf_128gpu.log"),
                                     "--topology", "dgx-a100:16", "--calibration", str(fitted / "profile.yaml"),
                                     "--json"])
    assert status == 0, err
    rows = json.loads(out)
    large = [row["error"] for row in rows if row["bytes"] >= 64 << 20]
    assert len(large) == 7 and max(abs(e) for e in large) < 0.13, large
    from_1MiB = [row["error"] for row in rows if row["bytes"] >= 1 << 20]
    assert len(from_1MiB) == 13 and max(abs(e) for e in from_1MiB) < 0.17, from_1MiB


def test_a_bad_algo_is_one_line_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", "--from-nccl-tests", str(LOGS / "all_reduce_perf_8gpu.log"), "--topology", "dgx-a100",
              "--algo", "nvls", "-o", str(tmp_path / "f.yaml")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "--algo: invalid choice: 'nvls'" in err


def test_calibrate_grows_a_calibrated_base_but_not_a_size_given(fitted, tmp_path, capsys):
    log = str(LOGS / "all_reduce_perf_16gpu.log")
    status, out, err = _run(capsys, ["calibrate", "--from-nccl-tests", log, "--topology", "dgx-a100", "--calibration",
                                     str(fitted / "profile.yaml"), "--algo", "ring", "-o", str(tmp_path / "a.yaml")])
    assert status == 0 and "fitted on dgx-a100:2 (dgx-a100 has 8 GPUs)" in out, err
    status, out, err = _run(capsys, ["calibrate", "--from-nccl-tests", log, "--topology", "dgx-a100:1",
                                     "-o", str(tmp_path / "b.yaml")])
    assert status == 2 and "on 16 ranks does not fit topology dgx-a100:1, which has 8 GPUs" in err


def test_topology_save_writes_the_calibrated_preset(fitted, tmp_path, capsys):
    assert main(["topology", "save", "dgx-a100:4", "--calibration", str(fitted / "profile.yaml"),
                 str(tmp_path / "c4.yaml")]) == 0
    G = load_topology(str(tmp_path / "c4.yaml"))
    links = read_profile(str(fitted / "profile.yaml")).links
    rated = {kind: fit["bandwidth_GBps"] for kind, fit in links.items() if "bandwidth_GBps" in fit}
    assert rated  # the fit determined at least one link class's rate
    for kind, rate in rated.items():
        assert class_rate(G, kind) == pytest.approx(rate)


def test_nvlink_sharp_servers_fit_as_the_simulator_chooses_only(monkeypatch):
    """On dgx-h100 NCCL runs its NVLS tree across servers by default, so calibrate fits no ring alternative
    there (a ring could match the NVLS tree's times only with NICs past their line rate): one fit."""
    from simulator.calibrate import fit
    from simulator.calibrate.fit import calibrate, simulate_buckets
    from simulator.calibrate.samples import CollectiveSample

    algorithms = []
    one_fit = fit._fit
    monkeypatch.setattr(fit, "_fit", lambda *args: algorithms.append(args[-1]) or one_fit(*args))

    G = load_topology("dgx-h100:2")
    keys = [("all_reduce", 16, 1 << k) for k in range(20, 31, 2)]
    times = simulate_buckets(G, keys)
    samples = [CollectiveSample(kind, ranks, nbytes, 1.1 * t, "synthetic") for (kind, ranks, nbytes), t
               in zip(keys, times)]
    result = calibrate(G, samples, [])
    assert algorithms == [None]
    assert not any("as the ring" in note or "fitted and predicted as ring" in note for note in result.notes)
