"""The plan's search over ZeRO stage and recompute mode: pinned flags as before, the lightest fitting setting
chosen, the pruned walk equal to the exhaustive rule, the choice in the table, JSON, CSV and launch line."""

from __future__ import annotations

import csv
import functools
import json
from dataclasses import replace

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.memory import usable_device_bytes
from simulator.pipeline.search_space import pipelined, schedule_variants
from simulator.pipeline.stage_step import pipeline_floor_s
from simulator.training.arrangement import TrainingArrangement
from simulator.training.memory_fit import memory_of
from simulator.training.search import plan_training
from simulator.training.settings import exhaustive_choice, lightest_fitting, settings_grid
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import gpu_nodes, load_topology

SMALL = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
         "--hidden", "512", "--heads", "8", "--layers", "4", "--global-batch", "32", "--simulate-top", "1")
OPTIONS = StepOptions(global_batch=32, layers=8, vocab=5000)
DP = TrainingArrangement(Arrangement("1d", (1,)), 16)


@pytest.fixture(scope="module")
def G():
    return load_topology("dgx-a100:2")


def block(b: int, attention: str = "flash") -> Workload:
    return replace(Workload.transformer(b, 128, 256, 4), attention=attention)


def peak(G, a, setting, b=2, attention="flash") -> int:
    return memory_of(a, block(b, attention), replace(OPTIONS, zero=setting[0], recompute=setting[1])).peak_bytes


def plan(G, candidates, device_bytes, zero=None, recompute=None, attention="flash", batch=2):
    cache: dict = {}
    return plan_training(G, candidates, lambda b: block(b, attention), OPTIONS, batch, simulate_top=0,
                         memory=functools.partial(memory_of, cache=cache), device_bytes=device_bytes, cache=cache,
                         variants=lambda a: schedule_variants(a, OPTIONS.layers), floor=pipeline_floor_s,
                         settings=lambda a, blk: settings_grid(zero, recompute, blk.attention, a.pp))


def test_the_grid_skips_selective_under_flash_and_zero_2_3_with_pipelines():
    assert settings_grid(None, None, "flash", 1) == (("none", "full"), ((0, 1), (2,), (3,)))
    assert settings_grid(None, None, "unfused", 2) == (("none", "selective", "full"), ((0, 1),))
    assert settings_grid(2, "full", "flash", 1) == (("full",), ((2,),))


def test_the_walk_asks_only_what_it_needs_and_agrees_with_the_exhaustive_rule():
    levels, tiers = settings_grid(None, None, "unfused", 1)
    # Memory falls with the level and the stage; this table fits from (Z2, none), (Z1, selective), (Z0, full):
    # (Z0, full) is in the tier of (Z1, selective), which fits with less recompute.
    need = {"none": 2, "selective": 1, "full": 0}
    fits = {(z, r): z >= need[r] for r in levels for z in (0, 1, 2, 3)}
    asked = []
    chosen, smallest = lightest_fitting(levels, tiers, lambda s: asked.append(s) or fits[s])
    assert chosen == [(2, "none"), (1, "selective")]
    assert (3, "none") not in asked and not any(r == "full" for _, r in asked) and smallest == (3, "full")
    times = {s: 1.0 + s[0] + {"none": 0, "selective": 0.5, "full": 2}[s[1]] for s in fits}
    assert exhaustive_choice(levels, tiers, fits.get, times.get) == (1, "selective")
    assert min(chosen, key=times.get) == (1, "selective")


def test_pinned_flags_give_the_row_of_those_options(G):
    usable = usable_device_bytes(G.nodes[gpu_nodes(G)[0]]["device"])
    for zero, recompute in ((0, "none"), (1, "full"), (3, "selective")):
        row = plan(G, [DP], usable, zero, recompute)[0]
        opts = replace(OPTIONS, zero=zero, recompute=recompute)
        assert (row.options.zero, row.options.recompute) == (zero, recompute)
        assert row.bound == step_time(G, DP, block(2), opts, bound=True)
        assert row.memory.peak_bytes == memory_of(DP, block(2), opts).peak_bytes


def test_recompute_is_chosen_when_nothing_else_fits_and_not_otherwise(G):
    a = TrainingArrangement(Arrangement("1d", (4,)), 4)
    lightest_without = min(peak(G, a, (z, "none")) for z in (0, 1, 2, 3))
    with_full = peak(G, a, (3, "full"))
    assert with_full < lightest_without
    row = plan(G, [a], (with_full + lightest_without) // 2)[0]
    assert row.fits and row.options.recompute == "full"
    roomy = plan(G, [a], 10 * lightest_without)[0]
    assert roomy.options.recompute == "none" and roomy.options.zero in (0, 1)


def test_zero_picks_the_lowest_stage_that_fits(G):
    peaks = {z: peak(G, DP, (z, "none")) for z in (0, 1, 2, 3)}
    assert peaks[0] > peaks[1] > peaks[2] > peaks[3]
    row = plan(G, [DP], (peaks[2] + peaks[1]) // 2)[0]  # 2 fits, 0 and 1 do not: 3 is not tried
    assert row.fits and (row.options.zero, row.options.recompute) == (2, "none")
    # Only ZeRO-3 fits without recompute (with it, ZeRO-2 + full recompute fits too, and on this small,
    # communication-bound block its step is the faster: FSDP's per-unit all-gathers are mostly exposed).
    row = plan(G, [DP], peaks[3], recompute="none")[0]
    assert row.fits and row.options.zero == 3
    tight = plan(G, [DP], peaks[3] // 4)[0]  # nothing fits: the least-memory setting, shown as not fitting
    assert tight.fits is False and (tight.options.zero, tight.options.recompute) == (3, "full")


@pytest.mark.parametrize("attention", ["flash", "unfused"])
def test_the_pruned_search_equals_the_exhaustive_one(G, attention):
    base = [DP, TrainingArrangement(Arrangement("1d", (4,)), 4), TrainingArrangement(Arrangement("2d", (2, 2, 1)), 4)]
    candidates = pipelined(base, (1, 2))
    peaks = sorted(peak(G, a, s, attention=attention) for a in base for s in ((0, "none"), (3, "full")))
    for device_bytes in (peaks[0], peaks[len(peaks) // 2], peaks[-1]):
        rows = plan(G, candidates, device_bytes, attention=attention)
        for row in rows:
            if row.skipped or row.fits is False:
                continue
            a, b = row.arrangement, row.bound.micro_batch
            levels, tiers = settings_grid(None, None, attention, a.pp)

            def opts(s):
                return replace(OPTIONS, zero=s[0], recompute=s[1])

            def fits(s):
                return memory_of(a, block(b, attention), opts(s)).peak_bytes <= device_bytes

            def step_s(s):
                return step_time(G, a, block(b, attention), opts(s), bound=True, split=False).step_s

            assert exhaustive_choice(levels, tiers, fits, step_s) == (row.options.zero, row.options.recompute)


def test_the_table_json_csv_and_launch_line_carry_the_choice(capsys, tmp_path):
    path = tmp_path / "plan.csv"
    status, out, err = run(capsys, *SMALL, "--csv", str(path))
    assert status == 0, err
    assert "ZeRO and recompute searched" in out.splitlines()[0]
    assert "ZeRO rc" in out.splitlines()[1]
    status, js, err = run(capsys, *SMALL, "--json")
    rows = [r for r in json.loads(js) if r["status"] == "ok"]
    assert all(r["zero"] in (0, 1, 2, 3) and r["recompute"] in ("none", "full") for r in rows)
    with open(path) as handle:
        listed = [r for r in csv.DictReader(handle) if r["status"] == "ok"]
    assert [(int(r["zero"]), r["recompute"]) for r in listed] == [(r["zero"], r["recompute"]) for r in rows]
    status, out, err = run(capsys, *SMALL, "--zero", "1", "--recompute", "full")
    assert "ZeRO-1, recompute full" in out.splitlines()[0]
    launch = out.splitlines()[out.splitlines().index(next(x for x in out.splitlines() if x.startswith("  launch"))) + 1]
    assert "--use-distributed-optimizer" in launch
    assert "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1" in launch


def test_launch_lines_for_each_setting():
    from simulator.training.launch import launch_lines

    mega = TrainingArrangement(Arrangement("1d", (8,)), 8)
    assert "--recompute-granularity selective" in launch_lines(mega, 1, StepOptions(global_batch=256, zero=1, recompute="selective"))[0]
    assert "--zero-stage 2" in launch_lines(mega, 1, StepOptions(global_batch=256, zero=2))[0]
    fsdp = launch_lines(TrainingArrangement(Arrangement("1d", (1,)), 64), 2,
                        StepOptions(global_batch=256, zero=3, recompute="full"))
    assert fsdp[2] == ("  or torchtitan (FSDP2): --parallelism.data_parallel_shard_degree 64 "
                       "--activation_checkpoint.mode full --training.local_batch_size 2 --training.global_batch_size 256")
    optimus = launch_lines(TrainingArrangement(Arrangement("2d", (4, 4, 1)), 4), 4,
                           StepOptions(global_batch=256, zero=1, recompute="full"))
    assert optimus[-1] == "  ZeRO-1 over the data-parallel group, recompute full"


def test_zero_3_memory_follows_fsdps_backward_prefetch():
    """BACKWARD_PRE gathers the next block before the current block's gradients: one block's bf16 weights more
    than BACKWARD_POST (which frees the current block's first) or no prefetch."""
    opts = replace(OPTIONS, zero=3, vocab=None)  # no embedding: the unit is one block
    pre, post, none = (memory_of(DP, block(2), replace(opts, backward_prefetch=p)).peak_bytes
                       for p in ("BACKWARD_PRE", "BACKWARD_POST", "NONE"))
    w = block(2)
    layer_params = 12 * w.hidden ** 2 + 13 * w.hidden  # a GPT block's weights and biases (Megatron's count)
    assert post == none and pre - none == 2 * layer_params
