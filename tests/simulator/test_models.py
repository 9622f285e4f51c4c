"""Model presets: every shape divides, and every size matches its paper's count."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.errors import InputError
from simulator.workloads.models import MODELS, preset


@pytest.mark.parametrize("name", MODELS)
def test_hidden_divides_into_heads_and_the_mlp_is_four_wide(name) -> None:
    m = MODELS[name]
    assert m.name == name
    assert m.hidden % m.heads == 0
    assert m.ffn == 4 * m.hidden


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

