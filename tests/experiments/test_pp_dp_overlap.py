"""experiments/pp_dp_overlap.py on the smallest cluster it takes: the shared network can only slow things down."""

from __future__ import annotations

from experiments.pp_dp_overlap import measure


def test_sharing_one_network_slows_neither_side_down_less_than_alone_and_the_window_has_sends():
    r = measure(2048, global_batch=256)
    assert r["hop_shared_s"] >= r["hop_s"] > 0 and r["wave_shared_s"] >= r["wave_s"] > 0
    # 16 micro-batches x 8 chunks, forward and backward: at most 256 actions per pipeline rank send.
    assert 0 < r["sends_in_window"] <= 256
    assert r["reduction_worst_s"] >= r["reduction_delay_s"] >= 0 and r["send_delay_s"] >= 0
    assert r["step_s"] > r["pp_comm_s"] > 0 and r["dp_comm_s"] > 0
