"""The Llama family on the command line: presets and files through predict, --kv-heads and --attention."""

from __future__ import annotations

import json

from simulator.workloads.models import preset
from tests.cli_run import run

UNTIED = """\
layers: 4
hidden: 256
heads: 8
kv_heads: 2
ffn: 512
vocab: 1000
seq: 64
norm: rmsnorm
activation: swiglu
position: rotary
tied: false
"""


def _plan(capsys, *extra: str) -> list[dict]:
    status, out, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-h100:1", "--global-batch", "16",
                           "--simulate-top", "0", "--json", *extra)
    assert status == 0, err
    return json.loads(out)


def test_predict_plans_llama3_8b_end_to_end_and_counts_its_parameters(capsys) -> None:
    rows = _plan(capsys, "--model", "llama3-8b", "--tp-sizes", "1,8")
    dp = next(r for r in rows if r["arrangement"] == "data parallel dp=8")
    # bf16 weights of every parameter, the untied output layer included (128256 is a multiple of 128)
    assert dp["memory"]["params_bytes"] == 2 * preset("llama3-8b").parameter_count()
    assert dp["flops_per_step"] == 16 * 8192 * preset("llama3-8b").flops_per_token()


def test_an_untied_file_holds_one_output_layer_more_than_the_tied_one(capsys, tmp_path) -> None:
    untied, tied = tmp_path / "untied.yaml", tmp_path / "tied.yaml"
    untied.write_text(UNTIED)
    tied.write_text(UNTIED.replace("tied: false", "tied: true"))
    by_file = {}
    for path in (untied, tied):
        rows = _plan(capsys, "--model", str(path), "--tp-sizes", "2", "--algos", "1d")
        by_file[path.name] = next(r for r in rows if r["tp"] == 2)["memory"]["params_bytes"]
    padded = 1024  # 1000 padded to a multiple of 128 x 2
    assert by_file["untied.yaml"] - by_file["tied.yaml"] == 2 * (padded // 2) * 256


def test_the_title_names_the_kernel_and_selective_under_flash_says_it_does_nothing(capsys) -> None:
    args = ("predict", "--gpus", "8", "--topology", "dgx-h100:1", "--model", "llama2-7b", "--global-batch", "16",
            "--tp-sizes", "8", "--simulate-top", "0", "--algos", "1d")
    status, out, _ = run(capsys, *args, "--recompute", "selective")
    assert status == 0 and "recompute selective, flash attention, bfloat16" in out
    assert "note: --recompute selective recomputes the attention core" in out
    status, out, _ = run(capsys, *args, "--recompute", "selective", "--attention", "unfused")
    assert status == 0 and "unfused attention" in out and "note: --recompute selective" not in out


def test_kv_heads_on_the_command_line_and_its_bad_values(capsys) -> None:
    base = ("schedule", "--algo", "1d", "--gpus", "2", "--workload", "transformer", "--batch", "1", "--seq", "4",
            "--hidden", "16", "--heads", "4")
    status, out, err = run(capsys, *base, "--kv-heads", "2")
    assert status == 0, err
    for bad, message in (("3", "kv_heads=3 must divide heads=4"), ("1", "kv_heads=1 must be divisible by p = 2")):
        status, out, err = run(capsys, *base, "--kv-heads", bad)
        assert status == 2 and len(err.splitlines()) == 1 and message in err, err


def test_attention_is_refused_for_a_workload_without_one(capsys) -> None:
    status, out, err = run(capsys, "schedule", "--algo", "1d", "--gpus", "2", "--workload", "gemm", "--m", "4",
                           "--k", "4", "--n", "4", "--attention", "unfused")
    assert status == 2 and "--attention is a transformer's attention kernel" in err and len(err.splitlines()) == 1
