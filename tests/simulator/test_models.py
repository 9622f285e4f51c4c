"""Model presets: every shape divides, every size matches its paper's count, and `tpsim model list`."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simulator.errors import InputError
from simulator.workloads.models import MODELS, ModelPreset, preset
from tests.cli_run import run


LLAMA_FAMILY = [name for name in MODELS if name.startswith(("llama", "mistral"))]


@pytest.mark.parametrize("name", MODELS)
def test_hidden_divides_into_heads_and_a_gpt_mlp_is_four_wide(name) -> None:
    m = MODELS[name]
    assert m.name == name
    assert m.hidden % m.heads == 0 and m.heads % m.kv_heads == 0
    if m.activation == "gelu":
        assert m.ffn == 4 * m.hidden


def test_the_issue_s_llama_family_presets_exist() -> None:
    assert LLAMA_FAMILY == ["llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
                            "mistral-7b"]


@pytest.mark.parametrize("name", LLAMA_FAMILY)
def test_a_llama_family_count_is_within_1_percent_of_the_published_one(name) -> None:
    m = MODELS[name]
    assert m.parameter_count() == pytest.approx(m.published_params, rel=0.01)
    assert (m.norm, m.activation, m.position, m.tied, m.bias, m.dropout) == ("rmsnorm", "swiglu", "rotary", False,
                                                                             False, 0.0)


def test_a_llama_count_by_hand() -> None:
    """llama3-8b term by term: grouped-query attention's smaller K and V, SwiGLU's three matrices, two
    RMSNorms, untied embedding and output layer, no positions, the final RMSNorm."""
    h, a, kv, d, f, v = 4096, 32, 8, 128, 14336, 128256
    layer = h * (a + 2 * kv) * d + h * h + 3 * h * f + 2 * h
    assert preset("llama3-8b").parameter_count() == 32 * layer + 2 * v * h + h == 8_030_261_248
    assert preset("llama3-8b").flops_per_token() == 3 * (32 * (2 * (layer - 2 * h) + 4 * 8192 * h) + 2 * h * v)


def test_llama3_has_the_llama_3_1_shapes_and_vocabulary() -> None:
    shapes = {n: (MODELS[n].layers, MODELS[n].hidden, MODELS[n].ffn, MODELS[n].heads, MODELS[n].kv_heads)
              for n in ("llama3-8b", "llama3-70b", "llama3-405b")}
    assert shapes == {"llama3-8b": (32, 4096, 14336, 32, 8), "llama3-70b": (80, 8192, 28672, 64, 8),
                      "llama3-405b": (126, 16384, 53248, 128, 8)}
    assert {MODELS[n].vocab for n in shapes} == {128256} and {MODELS[n].seq for n in shapes} == {8192}


def test_the_gpt_flops_per_token_are_korthikantis() -> None:
    from simulator.training.flops import model_flops_per_step
    m = preset("gpt3-175b")
    assert m.flops_per_token() == pytest.approx(model_flops_per_step(1, m.layers, m.seq, m.hidden, m.vocab) / m.seq,
                                                rel=1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_the_computed_parameter_count_is_within_5_percent_of_the_published_one(name) -> None:
    """A typo in any size (layers, hidden, vocab) moves the count by more than this."""
    m = MODELS[name]
    assert m.parameter_count() == pytest.approx(m.published_params, rel=0.05)


def test_the_parameter_count_by_hand() -> None:
    """megatron-175b term by term: 96 layers of 12h^2 + 13h, tied embedding, positions, final LayerNorm."""
    h = 12288
    assert preset("megatron-175b").parameter_count() == 96 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h
    assert preset("megatron-175b").parameter_count() == 174_615_846_912


def test_the_families_share_their_papers_settings() -> None:
    for m in MODELS.values():
        family = m.name.split("-")[0]
        if m.name in LLAMA_FAMILY:
            assert (m.seq, m.vocab) == {"llama2": (4096, 32000), "llama3": (8192, 128256),
                                        "mistral": (8192, 32000)}[family]
            continue
        if family == "gpt3":
            assert (m.seq, m.vocab, m.source.split(",")[0]) == (2048, 50257, "Brown et al. 2020")
        elif m.source.startswith("Korthikanti"):
            assert (m.seq, m.vocab) == (2048, 51200)
        else:
            assert m.source.startswith("Shoeybi") and (m.seq, m.vocab) == (1024, 51200)
        assert m.dropout == 0.1


def test_an_unknown_name_is_one_line_naming_the_closest() -> None:
    with pytest.raises(InputError, match=r"unknown model 'gpt3-13'; closest: gpt3-13b.*tpsim model list") as info:
        preset("gpt3-13")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("change, message", [({"heads": 24}, "hidden 2048 is not divisible by heads 24"),
                                             ({"layers": 0}, "layers must be an integer >= 1, got 0"),
                                             ({"dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0")])
def test_a_bad_shape_is_refused_with_the_value(change, message) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(preset("gpt3-1.3b"), **change)


def test_model_list_prints_one_aligned_row_per_preset(capsys) -> None:
    status, out, err = run(capsys, "model", "list")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["name", "layers", "hidden", "heads", "kv", "ffn", "seq", "vocab", "dropout",
                                "published", "computed", "source"]
    assert [line.split()[0] for line in lines[1:]] == list(MODELS)
    assert len({line.index("Brown") for line in lines[1:] if "Brown" in line}) == 1  # the source column aligns
    row = next(line for line in lines if line.startswith("gpt3-13b "))
    assert row.split()[1:11] == ["40", "5120", "40", "40", "20480", "2048", "50257", "0.1", "13.00B", "12.85B"]
    row = next(line for line in lines if line.startswith("llama3-70b "))
    assert row.split()[1:11] == ["80", "8192", "64", "8", "28672", "8192", "128256", "0", "70.00B", "70.55B"]


def test_model_list_json_round_trips_every_field(capsys) -> None:
    status, out, err = run(capsys, "model", "list", "--json")
    assert status == 0 and err == ""
    records = json.loads(out)
    assert [r["name"] for r in records] == list(MODELS)
    for record in records:
        computed = record.pop("computed_params")
        m = ModelPreset(**record)
        assert m == MODELS[m.name] and computed == m.parameter_count()


@pytest.mark.parametrize("argv", [["model"], ["model", "show"], ["model", "list", "--bogus"],
                                  ["model", "show", "llama-8b"]])
def test_a_bad_model_command_is_one_stderr_line_and_status_2(capsys, argv) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("tpsim model")
