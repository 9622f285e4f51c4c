"""Model files: a YAML or JSON file describes any dense decoder; bad files are one line and exit status 2."""

from __future__ import annotations

import json

import pytest

from simulator.errors import InputError
from simulator.workloads.model_file import KEYS, load_model_file
from simulator.workloads.models import preset, resolve_model
from tests.cli_run import run

LLAMA3_8B = """\
name: my-llama3-8b
layers: 32
hidden: 4096
heads: 32
kv_heads: 8
ffn: 14336
vocab: 128256
seq: 8192
norm: rmsnorm
activation: swiglu
position: rotary
tied: false
dropout: 0.0
"""


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_yaml_file_describes_the_same_model_as_the_preset(tmp_path) -> None:
    m = load_model_file(write(tmp_path, "l.yaml", LLAMA3_8B))
    p = preset("llama3-8b")
    assert m.name == "my-llama3-8b" and m.published_params is None and not m.bias
    assert m.parameter_count() == p.parameter_count() and m.flops_per_token() == p.flops_per_token()
    assert m.architecture() == p.architecture()


def test_a_json_file_with_defaults_is_a_gpt_named_after_the_file(tmp_path) -> None:
    path = write(tmp_path, "gpt.json", json.dumps({"layers": 40, "hidden": 5120, "heads": 40, "ffn": 20480,
                                                   "vocab": 50257, "seq": 2048, "dropout": 0.1}))
    m = resolve_model(path)
    assert m.name == "gpt" and (m.norm, m.activation, m.position, m.tied, m.bias) == ("layernorm", "gelu", "learned",
                                                                                     True, True)
    assert m.parameter_count() == preset("gpt3-13b").parameter_count()


BAD = [  # (file name, text, the message's pattern)
    ("m.yaml", LLAMA3_8B.replace("layers: 32\n", ""), r"missing layers \(required: layers, hidden, heads, ffn"),
    ("m.yaml", LLAMA3_8B.replace("ffn: 14336", "ffn: -1"), r"ffn must be an integer >= 1, got -1"),
    ("m.yaml", LLAMA3_8B.replace("heads: 32", "heads: 30"), r"hidden 4096 must be divisible by heads 30"),
    ("m.yaml", LLAMA3_8B.replace("kv_heads: 8", "kv_heads: 5"), r"heads 32 must be divisible by kv_heads 5 "
                                                                r"\(valid kv_heads: 1, 2, 4, 8, 16, 32\)"),
    ("m.yaml", LLAMA3_8B + "rope_theta: 500000\n", r"unknown key 'rope_theta'; valid keys: name, layers"),
    ("m.yaml", LLAMA3_8B.replace("norm: rmsnorm", "norm: batchnorm"), r"norm must be one of layernorm, rmsnorm, "
                                                                      r"got 'batchnorm'"),
    ("m.yaml", LLAMA3_8B.replace("tied: false", "tied: 2"), r"tied must be true or false, got 2"),
    ("m.yaml", LLAMA3_8B.replace("dropout: 0.0", "dropout: 1.5"), r"dropout must be a number in \[0, 1\)"),
    ("m.yaml", LLAMA3_8B.replace("hidden: 4096", "hidden: 4064").replace("heads: 32\n", "heads: 32\n"),
     r"position rotary needs an even head width, got hidden/heads = 127"),
    ("m.yaml", "layers: &n 32\nhidden: *n\n", r"YAML anchors and aliases are not accepted"),
    ("m.yaml", "layers: [1,\n", r"not valid YAML"),
    ("m.yaml", "- 1\n- 2\n", r"expected a mapping of keys \(name, layers"),
    ("m.json", "{\"layers\": 1,", r"not valid JSON"),
]


@pytest.mark.parametrize("name, text, message", BAD, ids=[f"bad-{i}" for i in range(len(BAD))])
def test_a_bad_file_names_the_field_and_what_is_valid(tmp_path, name, text, message) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(InputError, match=message) as info:
        resolve_model(path)
    assert "\n" not in str(info.value)


def test_a_missing_file_and_a_bad_file_on_the_command_line_are_one_stderr_line_and_status_2(capsys, tmp_path) -> None:
    for argv in (["model", "show", str(tmp_path / "none.yaml")],
                 ["model", "show", write(tmp_path, "b.yaml", LLAMA3_8B.replace("kv_heads: 8", "kv_heads: 3"))],
                 ["predict", "--gpus", "8", "--topology", "dgx-h100:1", "--model", str(tmp_path / "b.yaml"),
                  "--global-batch", "8"]):
        status, out, err = run(capsys, *argv)
        assert status == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "kv_heads" in err or "none.yaml" in err


def test_model_show_prints_a_file_and_a_preset_alike(capsys, tmp_path) -> None:
    status, out, err = run(capsys, "model", "show", write(tmp_path, "l.yaml", LLAMA3_8B))
    assert status == 0 and err == ""
    status, preset_out, _ = run(capsys, "model", "show", "llama3-8b")
    assert out.splitlines()[1:5] == preset_out.splitlines()[1:5]
    assert "parameters 8,030,261,248 = 8.03B\n" in out and "(published 8.00B)" in preset_out
    status, out, _ = run(capsys, "model", "show", "llama3-8b", "--json")
    record = json.loads(out)
    assert record["computed_params"] == 8_030_261_248 and record["kv_heads"] == 8


def test_every_key_is_documented_in_the_module() -> None:
    import simulator.workloads.model_file as module
    assert all(f"    {key}:" in module.__doc__ for key in KEYS)
