"""Every algorithm x pass on Llama-family blocks, proven on numbers by the interpreter.

The blocks mix what a Llama block brings (RMSNorm, SwiGLU, rotary embeddings, grouped-query and
multi-query attention, no biases) with GPT's pieces (``mixed``: LayerNorm and biases with SwiGLU and
rotary; ``gqa-gelu``: RMSNorm and grouped-query attention with GELU and learned positions), with and
without dropout, on sizes that are not powers of two where the constraints allow: 1d and 1d-sp need
the key/value heads (so the heads) and ffn divisible by P (1d-sp also M = b s, and P = 4 cuts
sequences across shards); 2d, summa25d and cannon25d the key/value heads by q and the batch by q (d q
for summa25d); 3d the batch, hidden and ffn by q^2. Where the key/value heads do not divide,
NotApplicable names them.
"""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import NotApplicable
from simulator.ir.interpret import interpret
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("fwd", "bwd", "both")
TOLERANCE = 1e-10
VARIANTS = {
    "llama": dict(norm="rmsnorm", activation="swiglu", position="rotary", bias=False),
    "mixed": dict(norm="layernorm", activation="swiglu", position="rotary", bias=True),
    "gqa-gelu": dict(norm="rmsnorm", activation="gelu", position="learned", bias=True),
}


def block(batch: int, seq: int, heads: int, head_dim: int, kv: int, ffn: int, dropout: float,
          variant: str) -> Workload:
    return Workload.transformer(batch, seq, heads * head_dim, heads, ffn=ffn, dropout=dropout, kv_heads=kv,
                                **VARIANTS[variant])


CASES = [  # (algorithm, grid, (batch, seq, heads, head width, kv heads, ffn, dropout, variant))
    ("1d", {"gpus": 1}, (2, 5, 4, 4, 1, 10, 0.1, "llama")),        # multi-query
    ("1d", {"gpus": 2}, (2, 4, 6, 4, 2, 14, 0.0, "llama")),
    ("1d", {"gpus": 3}, (2, 3, 6, 2, 3, 9, 0.2, "mixed")),
    ("1d", {"gpus": 2}, (3, 3, 4, 3, 2, 10, 0.1, "gqa-gelu")),    # odd head width: no rotary
    ("1d-sp", {"gpus": 2}, (2, 4, 6, 4, 2, 14, 0.1, "llama")),
    ("1d-sp", {"gpus": 3}, (1, 6, 6, 2, 3, 9, 0.0, "mixed")),
    ("1d-sp", {"gpus": 4}, (2, 6, 8, 2, 4, 20, 0.0, "llama")),     # shards of 3 rows: half sequences
    ("2d", {"grid": (1, 1, 1)}, (2, 3, 4, 2, 1, 6, 0.2, "llama")),
    ("2d", {"grid": (2, 2, 1)}, (2, 4, 8, 4, 2, 12, 0.1, "llama")),
    ("2d", {"grid": (3, 3, 1)}, (3, 3, 6, 2, 3, 15, 0.0, "mixed")),
    ("summa25d", {"grid": (1, 1, 2)}, (2, 3, 6, 2, 2, 9, 0.1, "llama")),
    ("summa25d", {"grid": (2, 2, 2)}, (4, 3, 4, 4, 2, 10, 0.1, "llama")),
    ("summa25d", {"grid": (2, 2, 3)}, (6, 2, 6, 2, 2, 14, 0.0, "gqa-gelu")),
    ("cannon25d", {"grid": (2, 2, 1)}, (2, 4, 8, 2, 2, 14, 0.0, "llama")),
    ("cannon25d", {"grid": (2, 2, 2)}, (2, 3, 4, 4, 2, 10, 0.2, "mixed")),
    ("3d", {"grid": (2, 2, 2)}, (4, 3, 4, 4, 2, 12, 0.1, "llama")),
    ("3d", {"grid": (2, 2, 2)}, (4, 2, 8, 2, 2, 20, 0.0, "gqa-gelu")),
]


def _id(case) -> str:
    algorithm, grid, sizes = case
    where = f"P={grid['gpus']}" if "gpus" in grid else "[{},{},{}]".format(*grid["grid"])
    b, s, a, d, kv, f, p, variant = sizes
    return f"{algorithm}-{where}-b{b}s{s}a{a}d{d}kv{kv}f{f}p{p}-{variant}"


def test_the_cases_cover_every_algorithm_variant_and_multi_query() -> None:
    assert {case[0] for case in CASES} == {"1d", "1d-sp", "2d", "summa25d", "cannon25d", "3d"}
    assert {case[2][7] for case in CASES} == set(VARIANTS)
    assert any(sizes[4] == 1 for _, _, sizes in CASES) and all(sizes[4] < sizes[2] for _, _, sizes in CASES)
    for algorithm in ("1d", "1d-sp", "2d", "summa25d", "cannon25d", "3d"):
        assert any(sizes[7] == "llama" for name, _, sizes in CASES if name == algorithm), algorithm


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_algorithm_and_pass_matches_the_dense_reference(case, passes: str) -> None:
    algorithm, grid, sizes = case
    workload = block(*sizes)
    schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
    validate_schedule(schedule)
    result = interpret(schedule, seed=sum(sizes[:6]))
    assert set(result.errors) == set(workload.output_names(passes))
    assert result.max_error <= TOLERANCE, result.errors


def test_the_llama_block_has_its_layers_and_no_biases() -> None:
    workload = block(2, 4, 6, 4, 2, 14, 0.0, "llama")
    assert set(workload.weights()) == {"ln1_g", "Wqkv", "Wproj", "ln2_g", "W1", "W2"}
    shapes = workload.shapes()
    assert shapes["Wqkv"] == (24, (6 + 2 * 2) * 4) and shapes["W1"] == (24, 2 * 14) and shapes["W2"] == (14, 24)
    assert [layer.part for layer in workload.layers()][:4] == ["ln1", "qkv", "rope", "attn"]
    assert set(workload.saved_activations()) == {"S1", "A1", "QKR", "CTX", "X2", "S2", "A2", "H", "Z"}


NOT_APPLICABLE = [  # (algorithm, grid, sizes, the message's pattern)
    ("1d", {"gpus": 4}, (2, 3, 8, 2, 2, 16, 0.0, "llama"), r"1d on 4 GPUs: kv_heads=2 must be divisible by p = 4 "
                                                         r"\(the attention core needs whole key/value groups"),
    ("1d-sp", {"gpus": 2}, (2, 4, 4, 2, 1, 8, 0.0, "llama"), r"1d-sp on 2 GPUs: kv_heads=1 must be divisible by p = 2"),
    ("2d", {"grid": (2, 2, 1)}, (2, 3, 4, 2, 1, 8, 0.0, "llama"), r"2d on \[2,2,1\]: kv_heads=1 must be divisible by "
                                                                r"q = 2"),
    ("summa25d", {"grid": (3, 3, 2)}, (6, 3, 6, 2, 2, 9, 0.0, "llama"), r"summa25d on \[3,3,2\]: kv_heads=2 must be "
                                                                      r"divisible by q = 3"),
    ("cannon25d", {"grid": (2, 2, 2)}, (2, 3, 6, 2, 3, 8, 0.0, "mixed"), r"cannon25d on \[2,2,2\]: kv_heads=3 must be "
                                                                       r"divisible by q = 2"),
    ("3d", {"grid": (2, 2, 2)}, (4, 3, 4, 4, 1, 12, 0.0, "llama"), r"3d on \[2,2,2\]: kv_heads=1 must be divisible by "
                                                                 r"q = 2"),
]


@pytest.mark.parametrize("algorithm, grid, sizes, message", NOT_APPLICABLE, ids=[case[0] for case in NOT_APPLICABLE])
def test_key_value_heads_that_do_not_divide_are_not_applicable(algorithm, grid, sizes, message) -> None:
    with pytest.raises(NotApplicable, match=message):
        build_schedule(algorithm, block(*sizes), "both", "float64", **grid)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_llama_workload_and_its_schedule_round_trip_through_their_records(variant) -> None:
    from simulator.ir.serialize import schedule_from_dict, schedule_to_dict
    workload = block(2, 4, 6, 4, 2, 14, 0.0, variant)
    for w in (workload, Workload.from_dict({**workload.to_dict(), "attention": "unfused"})):
        assert Workload.from_dict(w.to_dict()) == w
        schedule = build_schedule("1d", w, "both", "float64", gpus=2)
        assert schedule_to_dict(schedule_from_dict(schedule_to_dict(schedule))) == schedule_to_dict(schedule)


def test_a_gpt_record_has_no_architecture_fields_and_a_bad_one_is_named() -> None:
    from simulator.errors import InputError
    gpt = Workload.transformer(2, 4, 24, 6, ffn=20)
    assert set(gpt.to_dict()) == {"name", "batch", "seq", "hidden", "heads", "ffn", "dropout"}
    with pytest.raises(InputError, match="field 'kv_heads' must be an integer, got '2'"):
        Workload.from_dict({**gpt.to_dict(), "kv_heads": "2"})
    with pytest.raises(InputError, match=r"transformer norm 'batchnorm': valid: layernorm, rmsnorm"):
        Workload.from_dict({**gpt.to_dict(), "norm": "batchnorm"})
