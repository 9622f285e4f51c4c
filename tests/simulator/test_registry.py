"""Every registered algorithm through the whole pipeline: a newly registered algorithm is tested by adding it.

For each class in the registry, on each of its legal grids of 4 and 8 ranks (1-D, and every [q, q, d]),
each workload and each pass: the schedule validates, the interpreter proves it on numbers, the IR's
accounting counts every gemm FLOP of the workload exactly once, and the simulator and the analytic
model time it (the analytic bound never above the simulation).
"""

from __future__ import annotations

import pytest

from simulator.algorithms.base import Algorithm
from simulator.algorithms.registry import (ALGORITHMS, ALIASES, OVERLAP_ALGORITHMS, REGISTRY, build_schedule,
                                           canonical_algorithm, legal_grids)
from simulator.cli import build_parser
from simulator.errors import InputError, NotApplicable
from simulator.ir.accounting import account
from simulator.ir.interpret import interpret
from simulator.ir.validate import validate_schedule
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies import load_topology

WORKLOADS = (Workload.gemm(16, 8, 8), Workload.mlp(16, 8))
GPUS = (4, 8)


def _cases():
    for name, cls in REGISTRY.items():
        for grid in [g for gpus in GPUS for g in cls.legal_grids(gpus)]:
            for overlap in (False, True) if cls.supports_overlap else (False,):
                for workload in WORKLOADS:
                    for passes in ("fwd", "bwd", "both"):
                        yield pytest.param(name, grid, overlap, workload, passes,
                                           id=f"{name}-{'x'.join(map(str, grid))}{'-overlap' if overlap else ''}-"
                                              f"{workload.name}-{passes}")


def _dense_gemm_flops(workload: Workload, passes: str) -> int:
    """2 m k n per product of each linear: one forward, two backward."""
    products = {"fwd": 1, "bwd": 2, "both": 3}[passes]
    return sum(products * 2 * workload.m * linear.k * linear.n for linear in workload.linears())


@pytest.fixture(scope="module")
def machine():
    return load_topology("dgx-a100")


@pytest.mark.parametrize("name, grid, overlap, workload, passes", list(_cases()))
def test_every_algorithm_is_proven_accounted_and_timed(machine, name, grid, overlap, workload, passes):
    cls = REGISTRY[name]
    shape = {"grid": grid} if cls.square_grid else {"gpus": grid[0]}
    try:
        schedule = build_schedule(name, workload, passes, "float32", overlap=overlap, **shape)
    except NotApplicable as skipped:
        pytest.skip(str(skipped))
    assert schedule.algorithm == name and tuple(schedule.grid) == grid
    validate_schedule(schedule)
    result = interpret(schedule, seed=1)
    assert result.ok(), result.errors
    assert set(result.errors) == set(workload.output_names(passes))
    assert sum(acct.gemm_flops for acct in account(schedule)) == _dense_gemm_flops(workload, passes)
    simulated = simulate(schedule, machine)
    bound = analyze(schedule, machine)
    assert simulated.makespan_s > 0
    assert bound.makespan_s <= simulated.makespan_s * (1 + 1e-9)


def test_every_algorithm_has_a_grid_to_be_tested_on():
    assert all(cls.legal_grids(4) or cls.legal_grids(8) for cls in REGISTRY.values())


def test_every_algorithm_is_an_algorithm_with_its_own_name():
    assert ALGORITHMS == tuple(REGISTRY) and len(set(ALGORITHMS)) == len(ALGORITHMS)
    for name, cls in REGISTRY.items():
        assert issubclass(cls, Algorithm) and cls.name == name and cls.summary
        assert canonical_algorithm(name) == name
    for alias, name in ALIASES.items():
        assert canonical_algorithm(alias) == name and alias not in REGISTRY
    assert OVERLAP_ALGORITHMS == tuple(n for n, cls in REGISTRY.items() if cls.supports_overlap)


def test_the_command_line_offers_exactly_the_registered_algorithms():
    parser = build_parser()
    for command in ("schedule", "verify", "simulate", "run"):
        sub = parser._subparsers._group_actions[0].choices[command]
        algo = next(action for action in sub._actions if action.dest == "algo")
        assert tuple(algo.choices) == ALGORITHMS + tuple(ALIASES), command


def test_an_unknown_algorithm_names_every_registered_one():
    aliases = r" \(megatron = 1d, megatron-sp = 1d-sp, optimus = 2d, cannon = cannon25d, tesseract = summa25d\)"
    with pytest.raises(InputError, match="valid: " + ", ".join(ALGORITHMS) + aliases):
        canonical_algorithm("4d")


@pytest.mark.parametrize("gpus", [1, 2, 4, 8, 12, 16, 18, 27, 64])
def test_legal_grids_have_gpus_ranks_and_resolve_to_themselves(gpus):
    for name, cls in REGISTRY.items():
        for grid in legal_grids(name, gpus):
            total = grid[0] if len(grid) == 1 else grid[0] * grid[1] * grid[2]
            assert total == gpus, (name, grid)
            given = {"grid": grid} if cls.square_grid else {"grid": None}
            assert cls.resolve_grid(given["grid"], gpus) == grid
