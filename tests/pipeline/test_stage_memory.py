"""Memory per pipeline stage: pp = 1 is today's breakdown, activations in flight meet the published closed forms."""

from __future__ import annotations

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.memory import TrainingSetup, training_memory
from simulator.pipeline.closed_forms import in_flight_micro_batches
from simulator.pipeline.stage_memory import pipeline_memory, rank_parts
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import build_block
from simulator.workloads.workload import Workload

BLOCK = Workload.transformer(2, 128, 256, 4, dropout=0.1)
VOCAB = 1000
TENSORS = [Arrangement("1d", (2,)), Arrangement("1d-sp", (4,)), Arrangement("2d", (2, 2, 1)),
           Arrangement("cannon25d", (2, 2, 2))]


def _parts(tensor, setup):
    schedule = build_block(TrainingArrangement(tensor, 1), BLOCK, "both", "bfloat16")
    return [rank_parts(schedule, setup, r) for r in range(schedule.world_size)], schedule


@pytest.mark.parametrize("tensor", TENSORS, ids=lambda t: t.algorithm)
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("zero", [0, 1])
def test_one_stage_is_todays_breakdown(tensor, recompute, zero):
    setup = TrainingSetup(zero=zero, dp=4, layers=8, vocab=VOCAB, recompute=recompute)
    parts, schedule = _parts(tensor, setup)
    today = training_memory(schedule, setup)
    piped = pipeline_memory(parts, setup, "bfloat16", 1, "1f1b", 16)
    got = piped.to_dict()
    assert {k: v for k, v in got.items() if k.endswith("_bytes")} == \
        {k: v for k, v in today.to_dict().items() if k.endswith("_bytes")}
    assert piped.breakdown.rank == today.rank and got["stage"] == 0


def _layer_bytes(parts):
    return sum(k.nbytes for k in parts[0].layer_kept)


@pytest.mark.parametrize("pp,m", [(2, 1), (2, 8), (4, 2), (4, 8), (8, 16)])
def test_1f1b_keeps_min_p_minus_s_m_micro_batches_on_stage_s(pp, m):
    setup = TrainingSetup(dp=2, layers=16, vocab=VOCAB)
    parts, _ = _parts(Arrangement("1d", (2,)), setup)
    mem = pipeline_memory(parts, setup, "bfloat16", pp, "1f1b", m)
    per_layer, mask = _layer_bytes(parts), sum(k.nbytes for k in parts[0].first_kept)
    head = sum(k.nbytes for k in parts[0].last_kept)
    for s, stage in enumerate(mem.stages):
        kept = in_flight_micro_batches("1f1b", pp, m, s)
        expect = kept * 16 // pp * per_layer + (kept * mask if s == 0 else 0) + (head if s == pp - 1 else 0)
        assert stage.activations_bytes == expect, s
    assert mem.peak_bytes == max(stage.peak_bytes for stage in mem.stages)


@pytest.mark.parametrize("pp,m", [(2, 3), (4, 4), (4, 9)])
def test_gpipe_keeps_every_micro_batch(pp, m):
    setup = TrainingSetup(dp=2, layers=8)
    parts, _ = _parts(Arrangement("2d", (2, 2, 1)), setup)
    mem = pipeline_memory(parts, setup, "bfloat16", pp, "gpipe", m)
    assert [s.activations_bytes for s in mem.stages] == [m * 8 // pp * _layer_bytes(parts)] * pp


@pytest.mark.parametrize("pp,m,v", [(2, 4, 2), (4, 4, 2), (4, 8, 2), (4, 12, 3), (8, 16, 2)])
def test_interleaved_first_stage_keeps_korthikantis_factor(pp, m, v):
    layers = 2 * pp * v
    setup = TrainingSetup(dp=2, layers=layers)
    parts, _ = _parts(Arrangement("1d", (2,)), setup)
    mem = pipeline_memory(parts, setup, "bfloat16", pp, "interleaved", m, v)
    factor = in_flight_micro_batches("interleaved", pp, m, 0, v)  # micro-batches' worth of the rank's layers
    assert mem.stages[0].activations_bytes == pytest.approx(factor * layers / pp * _layer_bytes(parts), rel=1e-12)
    assert mem.worst == 0


def test_first_stage_holds_the_embedding_last_the_lm_head_middle_neither():
    setup = TrainingSetup(dp=1, layers=8, vocab=VOCAB)
    parts, _ = _parts(Arrangement("1d", (2,)), setup)
    mem = pipeline_memory(parts, setup, "bfloat16", 4, "1f1b", 8)
    (_, word), learned, (_, norm) = parts[0].embedding
    positions = sum(n for _, n in learned)  # the GPT block's learned positions (a rotary model has none)
    layers = 2 * parts[0].layer_el
    assert [s.params_bytes // 2 for s in mem.stages] == [layers + word + positions, layers, layers,
                                                         layers + word + norm]
    # The last stage keeps one micro-batch's fp32 logits; the first 4 micro-batches' embedding dropout masks.
    logits = next(k.nbytes for k in parts[0].last_kept if k.kind == "logits")
    assert any(i.nbytes == logits for i in mem.stages[3].items)
    assert mem.to_dict()["stages"][3]["stage"] == 3
