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


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_numpy_and_torch_versions_agree(name):
    torch = pytest.importorskip("torch")
    entry = FUNCTIONS[name]
    inputs = _inputs(entry.arity)
    expected = np.broadcast_to(entry.numpy(*inputs), (5, 7))
    out = torch.full((5, 7), float("nan"), dtype=torch.float64)
    entry.torch(out, *(torch.from_numpy(x) for x in inputs))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14, atol=1e-14)


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
        Local(fn=name, out="y", inputs=tuple(f"x{i}" for i in range(entry.arity)))
        with pytest.raises(ValueError, match="takes"):
            Local(fn=name, out="y", inputs=tuple(f"x{i}" for i in range(entry.arity + 1)))
    with pytest.raises(ValueError, match="unknown fn 'tanh'"):
        Local(fn="tanh", out="y", inputs=("x",))


def test_an_elementwise_layer_needs_a_one_input_function_with_a_backward():
    assert Elementwise("gelu", "H", "Z", 4).backward_fn == "gelu_backward"
    for name in ("add", "copy", "gelu_backward"):
        with pytest.raises(ValueError, match="valid: gelu"):
            Elementwise(name, "H", "Z", 4)
