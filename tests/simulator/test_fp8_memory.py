"""--dtype fp8 keeps the linears' inputs as Transformer Engine does: one FP8 copy (simulator/memory/activations.py)."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.fp8_cost import fp8_copy_bytes
from simulator.memory import TrainingSetup, training_memory
from simulator.memory.activations import layer_activations
from simulator.workloads.workload import Workload

P = 4


def _kept(schedule, rank, recipe, recompute="none"):
    return {k.kind: k for k in layer_activations(schedule, rank, recompute, fp8_recipe=recipe)}


@pytest.mark.parametrize("algo", ["1d", "1d-sp"])
@pytest.mark.parametrize("recipe", ["delayed", "current", "mxfp8"])
def test_each_linears_input_is_kept_as_one_fp8_copy(algo: str, recipe: str) -> None:
    wl = Workload.transformer(4, 64, 128, 4)  # flash attention: it keeps its own output, proj's input
    s = build_schedule(algo, wl, "both", "bfloat16", gpus=P)
    for rank in range(P):
        bf16, fp8 = _kept(s, rank, None), _kept(s, rank, recipe)
        el = {name: s.spec(rank, name).numel for name in ("A1", "CTX", "A2", "Z")}
        per = {"delayed": 1, "current": 1, "mxfp8": 1 + 1 / 32}[recipe]
        assert fp8_copy_bytes(recipe) == per
        # QKV's and FC1's inputs (the norms' outputs) and FC2's (the activation's output) leave bf16 for FP8;
        # proj's input, the attention output, stays in bf16 for the attention backward and gains an FP8 copy.
        assert bf16["kept"].nbytes - fp8["kept"].nbytes == 2 * (el["A1"] + el["A2"] + el["Z"])
        assert fp8["fp8"].nbytes == sum(el.values()) * per
        assert "CTX also kept in bf16" in fp8["fp8"].what and "fp8" not in bf16
        # Nothing else moves: the norms' moments, the attention's statistics.
        assert {k: v for k, v in fp8.items() if k not in ("kept", "fp8")} == \
            {k: v for k, v in bf16.items() if k != "kept"}


def test_an_unfused_attention_needs_not_its_output_so_proj_keeps_fp8_alone() -> None:
    wl = Workload.transformer(4, 64, 128, 4, attention="unfused")
    s = build_schedule("1d-sp", wl, "both", "bfloat16", gpus=P)
    bf16, fp8 = _kept(s, 0, None), _kept(s, 0, "delayed")
    el = sum(s.spec(0, name).numel for name in ("A1", "CTX", "A2", "Z"))
    assert bf16["kept"].nbytes - fp8["kept"].nbytes == 2 * el and fp8["fp8"].nbytes == el
    assert "bf16" not in fp8["fp8"].what


def test_full_recompute_keeps_the_layer_input_alone_and_the_training_peak_falls() -> None:
    wl = Workload.transformer(4, 64, 128, 4)
    s = build_schedule("1d-sp", wl, "both", "bfloat16", gpus=P)
    assert layer_activations(s, 0, "full", fp8_recipe="delayed") == layer_activations(s, 0, "full")
    bf16 = training_memory(s, TrainingSetup(layers=8))
    fp8 = training_memory(s, TrainingSetup(layers=8, fp8_recipe="delayed"))
    saved = sum(2 * s.spec(0, n).numel - s.spec(0, n).numel for n in ("A1", "A2", "Z")) - s.spec(0, "CTX").numel
    assert bf16.peak_bytes - fp8.peak_bytes == 8 * saved
    with pytest.raises(InputError, match="fp8 recipe 'block': one of delayed, current, mxfp8"):
        TrainingSetup(fp8_recipe="block")
