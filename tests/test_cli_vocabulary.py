"""One vocabulary: every algorithm name tpsim prints is one every command accepts, and the GPU counts a
topology or a schedule already states need not be repeated (``--gpus``, ``run --nproc``)."""

from __future__ import annotations

import pytest

from simulator.algorithms.arrangement import arrangements
from simulator.algorithms.registry import ALGORITHMS, ALIASES, build_schedule, canonical_algorithm
from simulator.cli import build_parser
from simulator.ir.serialize import schedule_to_dict
from simulator.training.arrangement import NAMES, training_arrangements
from simulator.workloads.workload import Workload
from tests.cli_run import run

GEMM = ("--workload", "gemm", "--m", "256", "--k", "128", "--n", "64")
PRINTED = {"megatron": "1d", "megatron-sp": "1d-sp", "optimus": "2d", "tesseract": "summa25d",
           "cannon": "cannon25d", "3d": "3d"}
"""The names the training plan prints (Korthikanti, Xu, Wang, Solomonik and Bian et al.'s), by hand."""


def test_every_name_the_plans_print_is_an_algorithm_name():
    assert {printed: key for key, printed in NAMES.items()} == PRINTED
    for printed, key in PRINTED.items():
        assert canonical_algorithm(printed) == key
    for plan in training_arrangements(64, ALGORITHMS, tp_sizes=(1, 4, 8, 16, 64), overlap=True):
        first = plan.label.split()[0].removesuffix("+overlap")
        if plan.tp > 1:
            assert canonical_algorithm(first) == plan.algorithm, plan.label
    for block in arrangements(64, ALGORITHMS, overlap=True):
        assert canonical_algorithm(block.label.split()[0].removesuffix("+overlap")) == block.algorithm


@pytest.mark.parametrize("command", ["schedule", "verify", "simulate", "run"])
def test_every_command_offers_every_name(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    algo = next(action for action in sub._actions if action.dest == "algo")
    assert set(PRINTED) | set(PRINTED.values()) <= set(algo.choices)
    assert set(ALIASES) | set(ALGORITHMS) == set(algo.choices)


@pytest.mark.parametrize("printed,key", [("optimus", "2d"), ("cannon", "cannon25d"), ("megatron", "1d")])
def test_a_name_builds_the_same_schedule_as_its_key(printed, key):
    workload = Workload.gemm(256, 128, 64)
    grid = (2, 2, 1) if key != "1d" else None
    gpus = 4 if key == "1d" else None
    assert schedule_to_dict(build_schedule(printed, workload, grid=grid, gpus=gpus)) == \
        schedule_to_dict(build_schedule(key, workload, grid=grid, gpus=gpus))


def test_schedule_takes_the_printed_names(capsys):
    named = run(capsys, "schedule", "--algo", "optimus", "--gpus", "4", *GEMM)
    keyed = run(capsys, "schedule", "--algo", "2d", "--gpus", "4", *GEMM)
    assert named[0] == 0 and named == keyed


def test_predict_algos_takes_the_printed_names_and_lists_them_when_wrong(capsys):
    common = ("predict", "--gpus", "4", "--topology", "a100-4gpu", *GEMM)
    named = run(capsys, *common, "--algos", "megatron,optimus,tesseract")
    keyed = run(capsys, *common, "--algos", "1d,2d,summa25d")
    assert named[0] == 0 and named == keyed
    status, out, err = run(capsys, *common, "--algos", "megatron,summa")
    assert status == 2 and out == ""
    assert err == ("tpsim predict: error: --algos 'megatron,summa': unknown algorithm 'summa'; valid: 1d, 1d-sp, "
                   "2d, cannon25d, summa25d, 3d, megatron, megatron-sp, optimus, cannon, tesseract\n")


def test_predict_gpus_defaults_to_every_gpu_of_the_topology(capsys):
    common = ("predict", "--topology", "a100-4gpu:2", *GEMM, "--algos", "1d,2d")
    default = run(capsys, *common)
    given = run(capsys, *common, "--gpus", "8")
    assert default[0] == 0 and default == given
    assert "on 8 GPUs of a100-4gpu:2" in default[1].splitlines()[0]
    status, _, err = run(capsys, *common, "--gpus", "16")
    assert status == 2 and err.startswith("tpsim predict: error: --gpus 16: the topology a100-4gpu:2 has only 8 GPUs")


def test_simulate_gpus_defaults_to_the_topology_where_one_grid_fits(capsys):
    common = ("simulate", "--topology", "a100-4gpu", *GEMM)
    for algo, shape in (("megatron", ("--gpus", "4")), ("optimus", ("--grid", "2,2,1"))):
        default = run(capsys, *common, "--algo", algo)
        given = run(capsys, *common, "--algo", algo, *shape)
        assert default[0] == 0 and default[1].splitlines()[:3] == given[1].splitlines()[:3]
        assert ", 4 GPUs," in default[1].splitlines()[0]


@pytest.mark.parametrize("algo,says", [
    ("tesseract", "--algo tesseract without --gpus or --grid takes 8 ranks from the topology a100-4gpu:2; 2 grids "
                  "fit: give --grid 2,2,2 or 1,1,8"),
    ("optimus", "--algo optimus without --gpus or --grid takes 8 ranks from the topology a100-4gpu:2; 2d needs P = "
                "q^2 GPUs"),
])
def test_a_default_that_does_not_fit_says_where_it_came_from(capsys, algo, says):
    status, out, err = run(capsys, "simulate", "--algo", algo, "--topology", "a100-4gpu:2", *GEMM)
    assert status == 2 and out == "" and err.startswith(f"tpsim simulate: error: {says}") and err.count("\n") == 1


def test_given_counts_still_contradict_the_topology(capsys):
    status, _, err = run(capsys, "simulate", "--algo", "1d", "--gpus", "16", "--topology", "a100-4gpu", *GEMM)
    assert status == 2 and err.count("\n") == 1 and "16" in err


def test_collective_group_size_defaults_to_every_gpu_of_the_topology(capsys):
    common = ("collective", "--op", "all_reduce", "--bytes", "1MiB", "--topology", "a100-4gpu:2")
    default = run(capsys, *common)
    assert default[0] == 0 and default == run(capsys, *common, "--group-size", "8")
    assert " on 8 ranks of a100-4gpu:2 " in default[1]
