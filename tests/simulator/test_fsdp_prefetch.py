"""ZeRO-3's all-gathers unit by unit, as FSDP prefetches them: the closed forms and the step."""

from __future__ import annotations

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.errors import InputError
from simulator.training.arrangement import TrainingArrangement
from simulator.training.fsdp_prefetch import gather_times
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from topologies import load_topology


def test_the_first_units_are_exposed_and_the_rest_hide_under_the_previous_unit():
    # A = 2 ms per block, R = 1 ms, 4 blocks of 3 ms forward and 5 ms backward, a 1 ms head backward
    fwd, bwd, total = gather_times(2e-3, 1e-3, 4, 3e-3, 5e-3, 1e-3)
    assert fwd == pytest.approx(1e-3 + 2e-3)            # R + A; blocks 1..3 hide under blocks 0..2
    assert bwd == pytest.approx(1e-3)                   # block 3's beside the head: 2 - 1 ms exposed
    assert total == pytest.approx(1e-3 + 2 * 4 * 2e-3)
    # a unit's all-gather longer than its compute: the excess is exposed on every unit
    fwd, bwd, _ = gather_times(4e-3, 0.0, 4, 3e-3, 5e-3, 1e-3)
    assert fwd == pytest.approx(4e-3 + 3 * 1e-3) and bwd == pytest.approx(3e-3)


def test_without_backward_prefetch_every_backward_gather_is_exposed():
    for choice in ("BACKWARD_POST", "NONE"):
        _, bwd, _ = gather_times(2e-3, 1e-3, 4, 3e-3, 5e-3, 1e-3, choice)
        assert bwd == pytest.approx(4 * 2e-3)
    with pytest.raises(InputError, match="one of BACKWARD_PRE, BACKWARD_POST, NONE"):
        gather_times(1.0, 1.0, 1, 1.0, 1.0, 1.0, "PRE")
    with pytest.raises(InputError, match="--backward-prefetch"):
        StepOptions(global_batch=8, backward_prefetch="BACKWARD")


def test_the_step_charges_the_exposed_part_and_reports_the_rest_hidden():
    G = load_topology("dgx-a100:2")
    block = Workload.transformer(2, 512, 1024, 8)
    a = TrainingArrangement(Arrangement("1d", (1,)), 16)
    steps = {bp: step_time(G, a, block, StepOptions(global_batch=32, layers=4, vocab=4096, zero=3,
                                                    backward_prefetch=bp))
             for bp in ("BACKWARD_PRE", "BACKWARD_POST", "NONE")}
    pre, post = steps["BACKWARD_PRE"], steps["BACKWARD_POST"]
    assert pre.step_s < post.step_s == steps["NONE"].step_s
    for s in steps.values():
        c = s.comm_breakdown()["zero_gather"]
        assert c["exposed_s"] > 0 and c["hidden_s"] > 0
        assert c["exposed_s"] == s.zero_gather_s
    # the same all-gathers either way: only what is hidden changes
    assert pre.comm_breakdown()["zero_gather"]["total_s"] == pytest.approx(post.comm_breakdown()["zero_gather"]["total_s"])
    sms = {k: s.terms.get("dp_overlap_sms", 0.0) for k, s in steps.items()}
    assert post.step_s - pre.step_s == pytest.approx(post.zero_gather_s - pre.zero_gather_s
                                                     + sms["BACKWARD_POST"] - sms["BACKWARD_PRE"])


def test_hidden_data_parallel_communication_costs_the_compute_its_sms():
    """Gathers and reductions under the compute hold NCCL's 24 channels of an A100's 108 SMs."""
    G = load_topology("dgx-a100:2")
    block = Workload.transformer(2, 512, 1024, 8)
    a = TrainingArrangement(Arrangement("1d", (1,)), 16)
    s = step_time(G, a, block, StepOptions(global_batch=32, layers=4, vocab=4096, zero=3))
    hidden = s.comm_breakdown()
    expected = 24 / 108 * (hidden["zero_gather"]["hidden_s"] + hidden["dp"]["hidden_s"])
    assert expected > 0 and s.terms["dp_overlap_sms"] == pytest.approx(expected)
