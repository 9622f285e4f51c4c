"""What a fit cannot determine goes back to the preset: lsq's release of knobs the data do not pin."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from simulator.calibrate.lsq import RELEASE_RMS, _release_undetermined
from simulator.cli import main
from topologies.profile import read_profile

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"


def test_only_knobs_the_data_do_not_pin_go_back_to_base():
    """Knob 0 is pinned both ways (a valley at its fitted value), knob 1 only from below (a cap above
    which nothing changes, as NICs under NCCL's channel cap), knob 2 not at all; knob 3 is pinned but
    its base costs little: it stays fitted and determined."""
    base = np.zeros(4)
    fitted = np.array([0.4, -0.35, 0.2, 0.02])

    def rms_at(x):
        return 0.03 + abs(x[0] - 0.4) + max(0.0, -0.35 - x[1]) + 0.0 * x[2] + 0.1 * abs(x[3] - 0.02)

    bounds = (np.full(4, -5.0), np.full(4, 5.0))
    released = _release_undetermined(fitted.copy(), base, bounds, rms_at)
    assert list(released) == [0.4, 0.0, 0.0, 0.02]
    assert rms_at(released) <= rms_at(fitted) + RELEASE_RMS


def test_a_two_server_nvls_tree_log_says_nothing_about_the_nics(tmp_path, capsys):
    """NCCL's NVLS tree on two H100 servers runs at its per-channel cap at every size the fit sees, so the
    NICs' rate stays the preset's and is named undetermined (least squares alone had moved it 47 -> 33 GB/s,
    which carried to a larger cluster makes every ring 30% slower)."""
    profile = tmp_path / "p.yaml"
    assert main(["calibrate", "--from-nccl-tests", str(DATA / "nebius-h100" / "all_reduce_perf_16gpu.log"),
                 "--topology", "dgx-h100", "--no-holdout", "-o", str(tmp_path / "t.yaml"),
                 "--profile", str(profile)]) == 0
    capsys.readouterr()
    carried = read_profile(str(profile))
    assert "ib.bandwidth_GBps" in carried.undetermined and "ib" not in carried.links
    times = []
    for extra in ([], ["--calibration", str(profile)]):
        assert main(["collective", "--op", "all_gather", "--group-size", "64", "--bytes", "1GiB",
                     "--topology", "dgx-h100:8", "--json", *extra]) == 0
        times.append(float(json.loads(capsys.readouterr().out)["time_s"]))
    assert math.isclose(times[0], times[1], rel_tol=0.02)  # the ring rides the NICs: the preset's rate
