"""The elementwise table: each function's numpy and torch versions agree, and the IR's ``local`` op reads it."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.ir.ops import LOCAL_FUNCTIONS, Local
from simulator.workloads.functions import FUNCTIONS, gelu, gelu_grad
from simulator.workloads.layers import Elementwise


def _inputs(arity: int) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.uniform(-6.0, 6.0, size=(5, 7)) for _ in range(arity)]


def _case(name: str) -> tuple[list[np.ndarray], dict]:
    """Inputs and parameters on which to run entry ``name``: shapes its rule accepts, dropout on."""
    rng = np.random.default_rng(3)
    x, dy = rng.uniform(-2, 2, (6, 8)), rng.uniform(-2, 2, (6, 8))
    row = rng.uniform(0.5, 1.5, (1, 8))
    moments = np.stack([x.sum(axis=1), (x * x).sum(axis=1)], axis=1)
    ln = {"n": 8, "eps": 1e-5}
    drop = {"p": 0.3, "stream": 2, "row0": 5, "col0": 8, "width": 24}
    attention = {"p": 0.25, "stream": 4, "seq": 3, "heads": 2, "head_dim": 4, "batch0": 1, "head0": 1,
                 "heads_total": 4}
    qkv, dctx = rng.uniform(-2, 2, (6, 24)), rng.uniform(-2, 2, (6, 8))
    sumsq = (x * x).sum(axis=1, keepdims=True)
    # two key/value groups of three query heads each, d = 4: (3 + 2) * 4 * 2 = 40 columns
    gqa = {**attention, "heads": 6, "head0": 3, "heads_total": 12, "group": 3}
    rotary = {"seq": 3, "group": 3, "head_dim": 4}
    gqa_qkv, gqa_ctx = rng.uniform(-2, 2, (6, 40)), rng.uniform(-2, 2, (6, 24))
    cases = {
        "bias_add": ([x, row], {}), "col_sum": ([dy], {}),
        "dropout": ([x], drop), "dropout_backward": ([x], drop),
        "bias_gelu": ([x, row], {}), "bias_gelu_backward": ([dy, x, row], {}),
        "bias_dropout_add": ([x, row, dy], drop),
        "row_moments": ([x], {}), "layernorm": ([x, moments, row, row - 1], ln),
        "layernorm_backward_moments": ([dy, x, moments, row], ln),
        "layernorm_backward": ([dy, x, moments, row, rng.uniform(-1, 1, (6, 2))], ln),
        "layernorm_gamma_grad": ([dy, x, moments], ln),
        "attention": ([qkv], attention), "attention_backward": ([dctx, qkv], attention),
        "row_sumsq": ([x], {}), "rmsnorm": ([x, sumsq, row], ln), "rmsnorm_backward_sum": ([dy, x, sumsq, row], ln),
        "rmsnorm_backward": ([dy, x, sumsq, row, rng.uniform(-1, 1, (6, 1))], ln),
        "rmsnorm_gamma_grad": ([dy, x, sumsq], ln),
        "layernorm_fused_stats": ([x], {}), "layernorm_fused": ([x, moments, row, row - 1], ln),
        "layernorm_fused_backward": ([dy, x, moments, row], ln), "layernorm_fused_gamma_grad": ([dy, x, moments], ln),
        "layernorm_fused_beta_grad": ([dy], {}), "rmsnorm_fused_stats": ([x], {}),
        "rmsnorm_fused": ([x, sumsq, row], ln), "rmsnorm_fused_backward": ([dy, x, sumsq, row], ln),
        "rmsnorm_fused_gamma_grad": ([dy, x, sumsq], ln),
        "layernorm_te_gamma_grad": ([dy, x, moments], ln), "rmsnorm_te_gamma_grad": ([dy, x, sumsq], ln),
        "rmsnorm_eager_stats": ([x], {}), "rmsnorm_eager": ([x, sumsq, row], ln),
        "rmsnorm_eager_backward": ([dy, x, sumsq, row], ln), "rmsnorm_eager_gamma_grad": ([dy, x, sumsq], ln),
        "swiglu": ([x], {}), "swiglu_backward": ([dy[:, :4], x], {}),
        "rotary": ([gqa_qkv], rotary), "rotary_backward": ([gqa_qkv], rotary),
        "swiglu_eager": ([x], {}), "swiglu_eager_backward": ([dy[:, :4], x], {}),
        "rotary_eager": ([gqa_qkv], rotary), "rotary_eager_backward": ([gqa_qkv], rotary),
        "attention_gqa": ([gqa_qkv], gqa), "attention_gqa_backward": ([gqa_ctx, gqa_qkv], gqa),
        "flash_attention": ([gqa_qkv], gqa), "flash_attention_backward": ([gqa_ctx, gqa_qkv], gqa),
        "triton_attention": ([gqa_qkv], gqa), "triton_attention_backward": ([gqa_ctx, gqa_qkv], gqa),
        "cudnn_attention": ([gqa_qkv], gqa), "cudnn_attention_backward": ([gqa_ctx, gqa_qkv], gqa),
    }
    return cases.get(name, (_inputs(FUNCTIONS[name].arity), {}))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_numpy_and_torch_versions_agree(name):
    torch = pytest.importorskip("torch")
    entry = FUNCTIONS[name]
    inputs, params = _case(name)
    seed = {"seed": 11} if entry.seeded else {}
    shape = entry.shape([x.shape for x in inputs], params) if inputs else (5, 7)
    expected = np.broadcast_to(entry.numpy(*inputs, **params, **seed), shape)
    out = torch.full(shape, float("nan"), dtype=torch.float64)
    entry.torch(out, *(torch.from_numpy(x) for x in inputs), **params, **seed)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13, atol=1e-13)


def test_gelu_is_the_tanh_approximation_torch_uses_and_its_gradient_is_its_derivative():
    torch = pytest.importorskip("torch")
    x = np.linspace(-6.0, 6.0, 241)
    reference = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(gelu(x), reference, rtol=1e-14, atol=1e-15)
    step = 1e-6
    np.testing.assert_allclose(gelu_grad(x), (gelu(x + step) - gelu(x - step)) / (2 * step), atol=1e-8)


def test_local_ops_take_exactly_the_table_and_its_arities():
    assert LOCAL_FUNCTIONS == {name: (f.arity, f.meaning) for name, f in FUNCTIONS.items()}
    for name, entry in FUNCTIONS.items():
        params = tuple((p, 1) for p in entry.params)
        Local(fn=name, out="y", inputs=tuple(f"x{i}" for i in range(entry.arity)), params=params)
        with pytest.raises(ValueError, match="takes"):
            Local(fn=name, out="y", inputs=tuple(f"x{i}" for i in range(entry.arity + 1)), params=params)
        if entry.params:
            with pytest.raises(ValueError, match="parameters"):
                Local(fn=name, out="y", inputs=tuple(f"x{i}" for i in range(entry.arity)), params=params[1:])
    with pytest.raises(ValueError, match="unknown fn 'tanh'"):
        Local(fn="tanh", out="y", inputs=("x",))


def test_an_elementwise_layer_needs_a_one_input_function_with_a_backward():
    assert Elementwise("gelu", "H", "Z", 4).backward_fn == "gelu_backward"
    for name in ("add", "copy", "gelu_backward", "dropout", "layernorm"):
        with pytest.raises(ValueError, match="valid: gelu"):
            Elementwise(name, "H", "Z", 4)
