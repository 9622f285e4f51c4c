"""experiments.block_time and experiments.paper_code: the figures reproductions build on."""

import pytest

from experiments.block_time import Block, block_time, register_topology
from experiments.paper_code import without_depth_all_reduce
from experiments.published import tpsim_json
from simulator.algorithms.registry import build_schedule
from simulator.ir.checks import check_static
from simulator.workloads.workload import Workload
from topologies.presets import build_preset


@pytest.mark.parametrize("block", [
    Block("summa25d", (2, 2, 2), batch=8, seq=32, hidden=256, heads=8, topology="a100-4gpu:2"),
    Block("1d", 8, batch=4, seq=64, hidden=256, heads=8, topology="dgx-a100", passes="fwd"),
])
def test_block_time_is_what_its_tpsim_command_prints(block):
    assert block_time(block) == tpsim_json(block.command().split()[1:])["makespan_s"]


def test_register_topology_refuses_a_second_graph_under_one_name():
    G = build_preset("a100-4gpu")
    register_topology("test-a100-4gpu-variant", G)
    register_topology("test-a100-4gpu-variant", G)  # the same graph again is fine
    with pytest.raises(ValueError, match="already registered"):
        register_topology("test-a100-4gpu-variant", build_preset("a100-4gpu"))


def _schedule(grid):
    return build_schedule("summa25d", Workload.transformer(16, 8, 16, 4, None, 0.0), "both", "bfloat16", grid=grid)


def test_paper_code_drops_every_depth_all_reduce_and_nothing_else():
    faithful = _schedule((2, 2, 2))
    paper = without_depth_all_reduce(faithful)
    check_static(paper)
    for before, after in zip(faithful.programs, paper.programs):
        kept = [op for op in before if not (op.kind == "all_reduce" and op.group.startswith("depth_"))]
        assert after == kept and len(after) < len(before)
    assert paper.options["paper_code"] == "no depth all-reduce"
    assert [label for _, label in paper.parts[0]] == [label for _, label in faithful.parts[0]]


def test_paper_code_changes_nothing_at_depth_one_and_is_faster_at_depth_two():
    flat = _schedule((2, 2, 1))
    assert without_depth_all_reduce(flat).programs == flat.programs
    times = [block_time(Block("summa25d", (2, 2, 2), 8, 32, 256, 8, "a100-4gpu:2", paper_code=code))
             for code in (False, True)]
    assert times[1] < times[0]
