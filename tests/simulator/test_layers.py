"""The layer list against independent oracles: torch autograd for every output, numpy for saved activations."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.workloads.blocks import BlockEvaluator, NumpyBackend
from simulator.workloads.layers import Elementwise, Linear, grad
from simulator.workloads.tensors import random_block
from simulator.workloads.workload import Workload

WORKLOADS = [Workload.gemm(12, 6, 9), Workload.mlp(10, 4)]


def _seeded(workload: Workload, seed: int, name: str) -> np.ndarray:
    rows, cols = workload.shapes()[name]
    return random_block(seed, name, (rows, cols), (0, rows), (0, cols))


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_the_dense_reference_equals_torch_autograd_on_the_same_layers(workload):
    torch = pytest.importorskip("torch")
    seed = 5
    layers = workload.layers()
    leaves = {name: torch.tensor(_seeded(workload, seed, name), requires_grad=True)
              for name in (layers[0].x, *workload.weights())}
    value = leaves[layers[0].x]
    for layer in layers:
        if isinstance(layer, Linear):
            value = value @ leaves[layer.w]
        else:
            assert isinstance(layer, Elementwise) and layer.fn == "gelu"
            value = torch.nn.functional.gelu(value, approximate="tanh")
    value.backward(torch.tensor(_seeded(workload, seed, grad(layers[-1].y))))
    expected = {layers[-1].y: value.detach(), **{grad(name): leaf.grad for name, leaf in leaves.items()}}
    reference = workload.reference(seed, "both")
    assert set(reference) == set(expected)
    for name, array in reference.items():
        np.testing.assert_allclose(array, expected[name].numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_saved_activations_are_blocks_of_the_forward():
    workload = Workload.mlp(10, 4)
    x, w1 = (_seeded(workload, 2, name) for name in ("X", "W1"))
    h = x @ w1
    z = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
    assert workload.saved_activations() == ("H", "Z")
    np.testing.assert_allclose(workload.input_block(2, "H", (3, 7), (5, 11)), h[3:7, 5:11], rtol=1e-13)
    np.testing.assert_allclose(workload.input_block(2, "Z", (0, 10), (0, 16)), z, rtol=1e-13)


def test_shapes_passes_and_names_follow_from_the_layer_list():
    mlp = Workload.mlp(10, 4)
    assert list(mlp.shapes()) == ["X", "W1", "W2", "H", "Z", "Y", "dY", "dZ", "dH", "dX", "dW1", "dW2"]
    assert mlp.input_names("bwd") == ("X", "W1", "W2", "H", "Z", "dY")
    assert mlp.output_names("both") == ("Y", "dX", "dW1", "dW2")
    gemm = Workload.gemm(12, 6, 9)
    assert gemm.shapes() == {"A": (12, 6), "B": (6, 9), "C": (12, 9), "dC": (12, 9), "dA": (12, 6), "dB": (6, 9)}
    assert gemm.input_names("fwd") == ("A", "B") and gemm.output_names("bwd") == ("dA", "dB")


def test_a_chunked_block_equals_the_whole_one_and_panels_are_built_once():
    workload = Workload.mlp(12, 4)
    whole = workload.reference(1, "both")["dW1"]
    evaluator = BlockEvaluator(workload, NumpyBackend(workload, 1))
    chunked = evaluator.block("dW1", (1, 3), (4, 12), width=5)  # the 12 tokens in chunks of 5, 5 and 2
    np.testing.assert_allclose(chunked, whole[1:3, 4:12], rtol=1e-13)
    assert set(key[1] for key in evaluator.panels) == {"W1", "W2"}  # W1[:, C] and W2[C, :], once each
