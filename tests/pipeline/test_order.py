"""Pipeline schedules as data: the orders, their validation, their replay against the published closed forms."""

from __future__ import annotations

import itertools

import pytest

from simulator.errors import InputError, ScheduleError
from simulator.pipeline.closed_forms import bubble_fraction, ideal_step_s, in_flight_micro_batches
from simulator.pipeline.order import Action, pipeline_order
from simulator.pipeline.printout import format_order
from simulator.pipeline.timeline import replay

CASES = [("gpipe", p, m, 1) for p, m in [(1, 1), (2, 3), (4, 4), (4, 9)]] + \
        [("1f1b", p, m, 1) for p, m in [(1, 3), (2, 1), (2, 3), (4, 2), (4, 8), (8, 13)]] + \
        [("interleaved", p, m, v) for p, m, v in [(2, 2, 2), (2, 4, 3), (4, 4, 2), (4, 8, 2), (4, 12, 3), (8, 16, 2)]]


def test_1f1b_on_two_ranks_is_megatrons_order():
    order = pipeline_order("1f1b", pp=2, micro_batches=3)
    assert [" ".join(map(str, r)) for r in order] == ["F0.s0 F1.s0 B0.s0 F2.s0 B1.s0 B2.s0",
                                                      "F0.s1 B0.s1 F1.s1 B1.s1 F2.s1 B2.s1"]


def test_interleaved_takes_groups_of_pp_micro_batches_per_chunk():
    # Megatron-LM's interleaved schedule on rank 0 of pp=2, v=2, m=4: warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards.
    first = pipeline_order("interleaved", pp=2, micro_batches=4, virtual_stages=2)[0]
    assert [str(a) for a in first[:6]] == ["F0.s0", "F1.s0", "F0.s2", "F1.s2", "F2.s0", "B0.s2"]


@pytest.mark.parametrize("schedule,p,m,v", CASES)
@pytest.mark.parametrize("t_f,t_b", [(1.0, 1.0), (1.0, 2.0), (0.3, 0.7)])
def test_replay_with_equal_stages_meets_the_closed_form(schedule, p, m, v, t_f, t_b):
    order = pipeline_order(schedule, p, m, v)
    # One micro-batch through a rank's v chunks takes t_f forward, t_b backward.
    timeline = replay(order, m, p * v, lambda a: (t_f if a.kind == "F" else t_b) / v)
    assert timeline.makespan_s == pytest.approx(ideal_step_s(schedule, p, m, t_f, t_b, v), rel=1e-12)
    busy = m * (t_f + t_b)
    assert timeline.bubble_s(0) / busy == pytest.approx(bubble_fraction(schedule, p, m, v), rel=1e-12)


@pytest.mark.parametrize("schedule,p,m,v", [c for c in CASES if c[0] != "interleaved"])
def test_activations_in_flight_meet_the_closed_form(schedule, p, m, v):
    timeline = replay(pipeline_order(schedule, p, m, v), m, p, lambda a: 1.0)
    assert [timeline.in_flight(r) for r in range(p)] == [in_flight_micro_batches(schedule, p, m, r) for r in range(p)]


@pytest.mark.parametrize("p,m,v", [(2, 4, 3), (4, 4, 2), (4, 8, 2), (4, 12, 3), (8, 16, 2)])
def test_interleaved_first_rank_keeps_korthikantis_factor(p, m, v):
    timeline = replay(pipeline_order("interleaved", p, m, v), m, p * v, lambda a: 1.0)
    # in_flight counts chunk-passes; a micro-batch's worth of the rank's layers is v of them.
    assert timeline.in_flight(0) / v == pytest.approx(in_flight_micro_batches("interleaved", p, m, 0, v))


def test_communication_delays_each_crossing():
    order = pipeline_order("1f1b", 2, 1)
    timeline = replay(order, 1, 2, lambda a: 1.0, p2p_s=lambda a: 0.5)
    # F on rank 0 [0,1], crossing 0.5, F on rank 1 [1.5,2.5], B [2.5,3.5], crossing, B on rank 0 [4,5].
    assert [(str(t.action), t.start_s, t.end_s) for r in timeline.ranks for t in r] == \
        [("F0.s0", 0.0, 1.0), ("B0.s0", 4.0, 5.0), ("F0.s1", 1.5, 2.5), ("B0.s1", 2.5, 3.5)]


def test_every_removed_or_moved_action_is_caught():
    order = pipeline_order("1f1b", 3, 4)
    for r, i in itertools.product(range(3), range(8)):
        broken = [list(o) for o in order]
        del broken[r][i]
        with pytest.raises(ScheduleError, match="never runs"):
            replay(broken, 4, 3, lambda a: 1.0)
    moved = [list(o) for o in order]
    moved[1].append(moved[0].pop(0))  # a stage-0 forward on rank 1
    with pytest.raises(ScheduleError, match="belongs to rank 0"):
        replay(moved, 4, 3, lambda a: 1.0)


def test_an_order_that_waits_on_itself_is_a_deadlock():
    order = pipeline_order("1f1b", 2, 2)
    # Rank 1 runs micro-batch 1's forward before 0's backward... fine; rank 0 running B1 before F1 is not.
    order[0] = [Action("F", 0, 0), Action("B", 1, 0), Action("F", 1, 0), Action("B", 0, 0)]
    with pytest.raises(ScheduleError, match=r"deadlocks: rank 0 at B1.s0 waits for F1.s0"):
        replay(order, 2, 2, lambda a: 1.0)


@pytest.mark.parametrize("args,message", [
    (("zb", 2, 4, 1), "--schedule 'zb' unknown; valid: gpipe, 1f1b, interleaved"),
    (("1f1b", 2, 4, 2), "--virtual-stages 2 needs --schedule interleaved"),
    (("interleaved", 4, 6, 2), "multiple of --pp"),
    (("interleaved", 1, 4, 2), "needs --pp >= 2"),
    (("1f1b", 0, 4, 1), "--pp must be an integer >= 1, got 0"),
    (("gpipe", 2, 0, 1), "--micro-batches must be an integer >= 1, got 0"),
])
def test_bad_sizes_are_one_clear_line(args, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        pipeline_order(*args)


def test_the_grid_shows_bubbles_and_micro_batches():
    assert format_order(pipeline_order("1f1b", 2, 3), 3) == "\n".join([
        "slot   0  1  2  3  4  5  6  7",
        "pp0   F0 F1  . B0 F2 B1  . B2",
        "pp1    . F0 B0 F1 B1 F2 B2  ."])
