"""Model states, the embedding, the device reserve and ``training_memory`` as a whole."""

from __future__ import annotations

import math

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.memory import MemoryBreakdown, TrainingSetup, training_memory, usable_device_bytes
from simulator.memory.embedding import embedding_activations, padded_vocab
from simulator.memory.states import bytes_per_parameter
from simulator.memory.training import rank_memory
from simulator.workloads.workload import Workload
from topologies.devices import A100_SXM4_40GB, H100_SXM5_80GB

S, B, H, A, T = 16, 4, 64, 8, 4
KEYS = ["params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "workspace_bytes", "peak_bytes",
        "items"]


def block(algo="1d", dtype="bfloat16", dropout=0.1, **kw):
    kw = kw or dict(gpus=T)
    return build_schedule(algo, Workload.transformer(B, S, H, A, dropout=dropout), "both", dtype, **kw)


def megatron_params(h: int, t: int) -> int:
    """One 1-D block's weights per rank: 12h^2/t in the four matrices, the column-parallel biases
    (3h + 4h)/t, and the replicated proj and FC2 biases and two LayerNorms, 6h."""
    return 12 * h * h // t + 7 * h // t + 6 * h


def test_bytes_per_parameter_follow_the_zero_paper():
    assert bytes_per_parameter("bfloat16", "adam") == (2, 2, 12)  # 16 B: ZeRO section 3.1
    assert bytes_per_parameter("float16", "sgd") == (2, 2, 8)
    assert bytes_per_parameter("float32", "adam") == (4, 4, 8)  # no master copy
    assert bytes_per_parameter("float32", "sgd") == (4, 4, 4)


@pytest.mark.parametrize("optimizer,per", [("adam", 16), ("sgd", 12)])
def test_megatron_model_states_per_rank_are_exact(optimizer, per):
    m = training_memory(block(), TrainingSetup(optimizer=optimizer, layers=3))
    n = 3 * megatron_params(H, T)
    assert (m.params_bytes, m.grads_bytes, m.optimizer_bytes) == (2 * n, 2 * n, (per - 4) * n)


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_shards_optimizer_then_gradients_then_parameters(zero):
    dp, layers = 8, 5
    m = training_memory(block(), TrainingSetup(zero=zero, dp=dp, layers=layers))
    n = layers * megatron_params(H, T)
    share = math.ceil(n / dp)
    assert m.optimizer_bytes == 12 * (share if zero >= 1 else n)
    assert m.grads_bytes == 2 * (share if zero >= 2 else n)
    assert m.params_bytes == 2 * (share if zero >= 3 else n)
    base = training_memory(block(), TrainingSetup(dp=dp, layers=layers))
    # ZeRO-2/3 hold one layer's unsharded gradients while they are reduced, ZeRO-3 also the gathered weights of
    # that layer and of the next, prefetched (FSDP's BACKWARD_PRE).
    unit = megatron_params(H, T) * 2 * (0 if zero < 2 else 1 if zero == 2 else 3)
    assert m.workspace_bytes - base.workspace_bytes == unit
    assert m.activations_bytes == base.activations_bytes


def test_without_backward_prefetch_zero_3_holds_one_gathered_unit_not_two():
    prefetched = training_memory(block(), TrainingSetup(zero=3, dp=8, layers=5))
    alone = training_memory(block(), TrainingSetup(zero=3, dp=8, layers=5, prefetch=False))
    assert prefetched.peak_bytes - alone.peak_bytes == 2 * megatron_params(H, T)  # one layer's bf16 weights
    assert training_memory(block(), TrainingSetup(zero=2, dp=8, layers=5, prefetch=False)).peak_bytes == \
        training_memory(block(), TrainingSetup(zero=2, dp=8, layers=5)).peak_bytes  # nothing gathered under ZeRO-2


def test_replication_over_depth_shows_in_parameters_not_activations():
    flat = training_memory(block("summa25d", grid=(2, 2, 1)), TrainingSetup(layers=2))
    deep = training_memory(block("summa25d", grid=(2, 2, 2)), TrainingSetup(layers=2))
    assert deep.params_bytes == flat.params_bytes  # every depth layer keeps the whole q x q weight blocks
    assert 2 * deep.activations_bytes == flat.activations_bytes


@pytest.mark.parametrize("algo,kw", [("1d", {}), ("1d-sp", {}), ("2d", dict(grid=(2, 2, 1))),
                                     ("summa25d", dict(grid=(2, 2, 2))), ("cannon25d", dict(grid=(2, 2, 2))),
                                     ("3d", dict(grid=(2, 2, 2)))])
def test_activations_scale_with_layers_and_the_parts_add_to_the_peak(algo, kw):
    schedule = block(algo, **kw)
    one, many = (training_memory(schedule, TrainingSetup(layers=n)) for n in (1, 7))
    assert one.activations_bytes > 0 and many.activations_bytes == 7 * one.activations_bytes
    assert many.workspace_bytes == one.workspace_bytes > 0
    data = many.to_dict()
    assert list(data) == KEYS
    assert data["peak_bytes"] == sum(data[k] for k in KEYS[:5]) == sum(item["bytes"] for item in data["items"])
    assert all(set(item) == {"what", "bytes"} for item in data["items"])
    peaks = [rank_memory(schedule, TrainingSetup(layers=7), r).peak_bytes for r in range(schedule.world_size)]
    assert many.peak_bytes == max(peaks) and many.rank == peaks.index(max(peaks))


def test_full_recompute_keeps_inputs_plus_one_layer_being_recomputed():
    schedule = block("1d-sp")
    none = training_memory(schedule, TrainingSetup(layers=10))
    full = training_memory(schedule, TrainingSetup(layers=10, recompute="full"))
    x = 2 * S * B * H // T  # the layer input's shard
    assert full.activations_bytes == 10 * x + (none.activations_bytes // 10 - x)
    assert full.peak_bytes < none.peak_bytes


def test_float32_and_dropout_free_blocks():
    m = training_memory(block(dtype="float32", dropout=0.0), TrainingSetup())
    n = megatron_params(H, T)
    assert (m.params_bytes, m.grads_bytes, m.optimizer_bytes) == (4 * n, 4 * n, 8 * n)
    assert not any("mask" in item["what"] for item in m.to_dict()["items"])


def test_vocab_parallel_embedding_parameters_and_activations():
    assert padded_vocab(50257, 8) == 51200 and padded_vocab(51200, 8) == 51200 and padded_vocab(50257, 1) == 50304
    vocab = 1000
    schedule = block("1d-sp")
    with_vocab = training_memory(schedule, TrainingSetup(vocab=vocab))
    without = training_memory(schedule, TrainingSetup())
    v = padded_vocab(vocab, T)  # 1024
    assert with_vocab.params_bytes - without.params_bytes == 2 * (v // T * H + S * H + 2 * H)
    kept = {k.kind: k.nbytes for k in embedding_activations(schedule, 0, vocab)}
    sbh = S * B * H
    # Korthikanti section 4.3 with sequence parallelism: 4sbh/t (1 + v/h), plus the dropout mask sbh/t.
    assert kept["mask"] + kept["kept"] + kept["logits"] == 4 * sbh // T * (1 + v / H) + sbh // T
    assert kept["logits"] == 4 * S * B * v // T  # fp32
    with pytest.raises(InputError, match="a vocabulary"):
        training_memory(build_schedule("1d", Workload.mlp(8, 8), "both", "float32", gpus=2), TrainingSetup(vocab=8))


def test_a_schedule_without_its_backward_is_refused():
    schedule = build_schedule("1d", Workload.transformer(B, S, H, A), "fwd", "bfloat16", gpus=T)
    with pytest.raises(InputError, match="--pass both"):
        training_memory(schedule, TrainingSetup())


@pytest.mark.parametrize("kwargs,message", [
    (dict(zero=4), "--zero 4: ZeRO stages are 0, 1, 2, 3"),
    (dict(zero=True), "--zero True: ZeRO stages"),
    (dict(optimizer="lion"), "--optimizer lion: optimizers are adam, sgd"),
    (dict(recompute="some"), "--recompute some: recomputation is one of none, selective, selective-op, full"),
    (dict(dp=0), "--dp 0: must be an integer >= 1"),
    (dict(layers=-1), "--layers -1: must be an integer >= 1"),
    (dict(vocab=0), "vocabulary size 0: must be an integer >= 1"),
    (dict(dp=2**40), "over the largest tensor extent"),
])
def test_setup_refuses_bad_values_in_one_line(kwargs, message):
    with pytest.raises(InputError, match=message.replace("+", r"\+")) as error:
        TrainingSetup(**kwargs)
    assert "\n" not in str(error.value)


def test_usable_device_memory_is_the_datasheet_less_the_reserve():
    assert usable_device_bytes(H100_SXM5_80GB.as_dict()) == 74_000_000_000  # 80 - 2 - 4
    assert usable_device_bytes(A100_SXM4_40GB.as_dict()) == 36_000_000_000  # 40 - 2 - 2
    assert usable_device_bytes({"memory_GB": 1.0}) == 0
    with pytest.raises(InputError, match="memory_GB must be a positive number"):
        usable_device_bytes({"name": "x"})
    m = MemoryBreakdown(())
    assert m.fits(0) and m.peak_bytes == 0
