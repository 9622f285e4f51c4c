"""`tpsim simulate`'s training memory: the breakdown it prints, ``memory`` in --json, and bad training flags."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.memory import TrainingSetup, training_memory
from simulator.workloads.models import preset
from simulator.workloads.workload import Workload
from tests.cli_run import run

BLOCK = ["--algo", "1d-sp", "--gpus", "4", "--workload", "transformer", "--batch", "2", "--seq", "16",
         "--hidden", "64", "--heads", "8", "--dropout", "0.1", "--topology", "dgx-a100"]
MLP = ["--algo", "1d", "--gpus", "2", "--workload", "mlp", "--m", "8", "--hidden", "8", "--topology", "dgx-a100"]


def test_json_memory_is_the_breakdown_of_the_flags(capsys):
    status, out, _ = run(capsys, "simulate", *BLOCK, "--layers", "6", "--zero", "1", "--dp", "4",
                         "--recompute", "selective", "--optimizer", "sgd", "--json")
    assert status == 0
    # simulate runs Megatron-LM's asynchronous dX communication by default: its schedule keeps the handles.
    schedule = build_schedule("1d-sp", Workload.transformer(2, 16, 64, 8, dropout=0.1), "both", "bfloat16", gpus=4,
                              async_dgrad=True)
    # No --model: the embedding and LM head take GPT-2's vocabulary (--vocab's default).
    # Main gradients in fp32 under bf16, as Megatron-LM keeps them.
    setup = TrainingSetup(optimizer="sgd", zero=1, recompute="selective", dp=4, layers=6, vocab=50257, grad_bytes=4)
    assert json.loads(out)["memory"] == training_memory(schedule, setup).to_dict()


def test_model_preset_brings_its_vocabulary_and_layers(capsys):
    status, out, _ = run(capsys, "simulate", "--algo", "1d", "--gpus", "4", "--model", "gpt3-125m", "--batch", "1",
                         "--topology", "dgx-a100", "--json")
    assert status == 0
    memory = json.loads(out)["memory"]
    model = preset("gpt3-125m")
    schedule = build_schedule("1d", Workload.transformer(1, model.seq, model.hidden, model.heads,
                                                         dropout=model.dropout), "both", "bfloat16", gpus=4,
                              async_dgrad=True)
    expected = training_memory(schedule, TrainingSetup(layers=model.layers, vocab=model.vocab,
                                                                grad_bytes=4)).to_dict()
    assert memory == expected
    assert any("logits" in item["what"] for item in memory["items"])


def test_human_output_prints_the_breakdown_block(capsys):
    status, out, _ = run(capsys, "simulate", *BLOCK, "--layers", "2")
    assert status == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  memory per GPU (rank "))
    labels = [line.split()[0] for line in lines[start + 1:] if not line.startswith("      ")]
    assert labels == ["parameters", "gradients", "optimizer", "activations", "workspace", "usable"]
    assert lines[-1].endswith("of A100-SXM4-40GB's 40 GB, less the reserve: fits")


def test_a_peak_over_the_device_does_not_fit(capsys):
    # GPT-3 13B on 8 A100-40GB with 1-D Megatron and two sequences: 16 B x 1.6e9 parameters per GPU plus
    # 19 GB of activations.
    status, out, _ = run(capsys, "simulate", "--algo", "1d", "--gpus", "8", "--model", "gpt3-13b", "--batch", "2",
                         "--topology", "dgx-a100")
    assert status == 0 and out.splitlines()[-1].endswith("40 GB, less the reserve: does not fit")
    status, out, _ = run(capsys, "simulate", "--algo", "1d", "--gpus", "8", "--model", "gpt3-13b", "--batch", "2",
                         "--topology", "dgx-a100", "--zero", "1", "--dp", "8")
    assert status == 0 and out.splitlines()[-1].endswith("40 GB, less the reserve: fits")


def test_no_memory_for_workloads_other_than_a_transformer_block_fwd_bwd(capsys):
    status, out, _ = run(capsys, "simulate", *MLP, "--json")
    assert status == 0 and "memory" not in json.loads(out)
    status, out, _ = run(capsys, "simulate", *BLOCK, "--pass", "fwd", "--json")
    assert status == 0 and "memory" not in json.loads(out)


CASES = [
    ([*BLOCK, "--zero", "4"], "--zero 4: ZeRO stages are 0, 1, 2, 3"),
    ([*BLOCK, "--zero", "-1"], "--zero -1: ZeRO stages are 0, 1, 2, 3"),
    ([*BLOCK, "--zero", "one"], "argument --zero: invalid int value: 'one'"),
    ([*BLOCK, "--optimizer", "adamw"], "--optimizer adamw: optimizers are adam, sgd"),
    ([*BLOCK, "--recompute", "partial"], "--recompute partial: recomputation is one of none, selective, selective-op, full"),
    ([*BLOCK, "--dp", "0"], "--dp 0: must be an integer >= 1"),
    ([*BLOCK, "--dp", "-3"], "--dp -3: must be an integer >= 1"),
    ([*BLOCK, "--dp", "4294967296"], "--dp 4294967296: 4,294,967,296 is over the largest tensor extent"),
    ([*MLP, "--zero", "7"], "--zero 7: ZeRO stages are 0, 1, 2, 3"),  # refused for any workload
]


@pytest.mark.parametrize("argv, message", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_training_flag_is_one_line_exit_2(argv, message, capsys):
    status, out, err = run(capsys, "simulate", *argv)
    assert status == 2, (status, err)
    assert err.count("\n") == 1 and err.startswith("tpsim simulate: error: ") and message in err, err
    assert out == "" and "Traceback" not in err


def test_vocab_sizes_the_embedding_of_any_transformer(capsys):
    def params(*extra) -> int:
        status, out, _ = run(capsys, "simulate", *BLOCK, "--json", *extra)
        assert status == 0
        return json.loads(out)["memory"]["params_bytes"]

    small, default = params("--vocab", "128"), params()
    # the embedding [V padded to a multiple of 512, 64] split over 4 ranks: (50,688 - 512) / 4 rows of 64 bf16 more
    assert default - small == (50688 - 512) // 4 * 64 * 2
