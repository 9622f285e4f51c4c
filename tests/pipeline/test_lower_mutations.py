"""Mutation tests of the pipelined step: removing or reordering any send, receive or gradient accumulation
fails the proof, in the validator (a deadlock, a missing handle, a buffer used in flight) or in the numbers.

One tensor-parallel rank per stage keeps every run to milliseconds, so every such op is mutated; the
2-D case checks the sends of a layout with several blocks per stage.
"""

from __future__ import annotations

import copy

import pytest

from simulator.errors import ScheduleError
from simulator.ir.ops import Local, Recv, Send, Wait
from simulator.ir.validate import validate_schedule
from simulator.pipeline.lower import lower_pipeline
from simulator.pipeline.proof import prove_pipeline
from simulator.workloads.workload import Workload

BLOCK = Workload.transformer(batch=2, seq=2, hidden=4, heads=2)


def _mixed():
    """Interleaved, pp 2, v 2: each channel carries activations and gradients of both chunks."""
    return lower_pipeline("1d", BLOCK, 4, 2, 2, "interleaved", 2, "float32", gpus=1)


def _fails(step) -> bool:
    try:
        validate_schedule(step)
        return not prove_pipeline(step).ok(1e-12)
    except ScheduleError:
        return True


def _mutated(step, rank: int, program: list):
    other = copy.copy(step)
    other.programs = list(step.programs)
    other.programs[rank] = program
    return other


def _sites(step, kind):
    return [(rank, i) for rank, program in enumerate(step.programs) for i, op in enumerate(program)
            if isinstance(op, kind) and op.handle.startswith("pp.")]


def _accumulations(step):
    return [(rank, i) for rank, program in enumerate(step.programs) for i, op in enumerate(program)
            if isinstance(op, Local) and ".m" not in op.out]


def test_the_unmutated_schedules_pass():
    assert not _fails(_mixed())
    assert not _fails(lower_pipeline("1d", BLOCK, 2, 2, 2, "gpipe", 1, "float32", gpus=1))


@pytest.mark.parametrize("kind", [Send, Recv])
def test_removing_any_send_or_receive_fails(kind):
    step = _mixed()
    sites = _sites(step, kind)
    assert len(sites) == 12  # 3 stage boundaries x 2 micro-batches x (activation, gradient)
    for rank, i in sites:
        program = step.programs[rank][:i] + step.programs[rank][i + 1:]
        assert _fails(_mutated(step, rank, program)), (rank, step.programs[rank][i])


@pytest.mark.parametrize("kind", [Send, Recv])
def test_swapping_two_messages_of_one_channel_fails(kind):
    """The n-th send from a to b meets the n-th receive at b from a: a swap puts data in the wrong buffer."""
    step = _mixed()
    swapped = 0
    for rank, i in _sites(step, kind):
        program = step.programs[rank]
        nxt = next((j for j in range(i + 1, len(program)) if isinstance(program[j], kind)
                    and program[j].peer == program[i].peer and program[j].handle.startswith("pp.")), None)
        if nxt is None:
            continue
        mutated = list(program)
        mutated[i], mutated[nxt] = mutated[nxt], mutated[i]
        assert _fails(_mutated(step, rank, mutated)), (rank, program[i], program[nxt])
        swapped += 1
    assert swapped == 10  # two channels (0 to 1, 1 to 0) of 6 messages each: 5 neighbouring pairs each


def test_sending_before_the_activation_is_computed_fails():
    step = _mixed()
    for rank, i in _sites(step, Send):
        program = step.programs[rank]
        producer = max(j for j in range(i) if program[i].buf in program[j].writes())
        mutated = program[:producer] + [program[i]] + program[producer:i] + program[i + 1:]
        assert _fails(_mutated(step, rank, mutated)), (rank, program[i])


def test_reading_a_received_buffer_before_its_wait_fails():
    step = _mixed()
    for rank, program in enumerate(step.programs):
        for i, op in enumerate(program):
            if not (isinstance(op, Wait) and op.handle.startswith("pp.r")):
                continue
            buf = next(o.buf for o in program if isinstance(o, Recv) and o.handle == op.handle)
            reader = next(j for j in range(i + 1, len(program)) if buf in program[j].reads())
            mutated = program[:i] + program[i + 1:reader + 1] + [op] + program[reader + 1:]
            assert _fails(_mutated(step, rank, mutated)), (rank, op)


def test_removing_or_hoisting_any_gradient_accumulation_fails():
    step = lower_pipeline("1d", BLOCK, 2, 2, 2, "gpipe", 1, "float32", gpus=1)
    sites = _accumulations(step)
    assert len(sites) == 2 * 2 * len(BLOCK.weights())  # 2 ranks x 1 layer x 2 micro-batches x each weight
    assert {step.programs[r][i].fn for r, i in sites} == {"copy", "add"}
    for rank, i in sites:
        program = step.programs[rank]
        assert _fails(_mutated(step, rank, program[:i] + program[i + 1:])), (rank, program[i])
        part = program[i].inputs[-1]
        producer = max(j for j in range(i) if part in program[j].writes())
        hoisted = program[:producer] + [program[i]] + program[producer:i] + program[i + 1:]
        assert _fails(_mutated(step, rank, hoisted)), (rank, program[i])


def test_removing_or_hoisting_an_lm_head_accumulation_fails():
    step = lower_pipeline("1d", BLOCK, 2, 2, 2, "1f1b", 1, "float32", gpus=1, vocab=8)
    sites = [(r, i) for r, i in _accumulations(step) if step.programs[r][i].out.endswith(".head")]
    assert [step.programs[r][i].fn for r, i in sites] == ["copy", "add"]
    for rank, i in sites:
        program = step.programs[rank]
        assert _fails(_mutated(step, rank, program[:i] + program[i + 1:])), program[i]
        producer = max(j for j in range(i) if program[i].inputs[-1] in program[j].writes())
        assert _fails(_mutated(step, rank, program[:producer] + [program[i]] + program[producer:i] + program[i + 1:]))


def test_removing_any_send_of_a_2d_stage_fails():
    step = lower_pipeline("2d", BLOCK, 2, 2, 2, "1f1b", 1, "float32", grid=(2, 2, 1))
    sites = _sites(step, Send)
    assert len(sites) == 16  # 4 ranks per stage x 2 micro-batches x (activation or gradient)
    for rank, i in sites:
        program = step.programs[rank][:i] + step.programs[rank][i + 1:]
        assert _fails(_mutated(step, rank, program)), (rank, step.programs[rank][i])
