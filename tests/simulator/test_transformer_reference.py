"""The transformer block's dense reference against an independent oracle: torch float64 autograd.

The oracle is written from torch's own ops and the layout the kernels document, not from tpsim's
layer list or function table: ``layer_norm`` (eps 1e-5), ``x @ W + b``, a causal softmax attention
written out per sequence and head on the QKV columns laid out per head as [Q_j K_j V_j]
(``kernels.attention``), ``gelu(approximate="tanh")`` and the residuals. Only the dropout masks come
from tpsim (``kernels.dropout.keep_mask``, a pure function of seed, stream and global index), applied
as multiplication by the mask and 1/(1-p), with the global indices row-major over the [M, h] tensors
and the [b, a, s, s] attention probabilities, streams 0 (attention), 1 (after proj), 2 (after FC2).
The mask kernel itself is checked on its own first: it drops about p of the elements, and its masks
differ between seeds and between streams.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.workloads.graph import numpy_call, values_by_chunks
from simulator.workloads.kernels.dropout import block_index, dropout, keep_mask
from simulator.workloads.layers import grad
from simulator.workloads.tensors import random_block
from simulator.workloads.workload import Workload, dense_graph_values

STREAM_ATTENTION, STREAM_PROJ, STREAM_FC2 = 0, 1, 2

WORKLOADS = [
    Workload.transformer(2, 5, 36, 6, ffn=20, dropout=0.0),
    Workload.transformer(2, 5, 36, 6, ffn=20, dropout=0.2),
    Workload.transformer(3, 3, 72, 12, dropout=0.0),   # ffn = 4h
    Workload.transformer(3, 3, 72, 12, dropout=0.2),
    Workload.transformer(1, 7, 12, 3, ffn=9, dropout=0.5),
    # Megatron-LM's fused kernels off (the others run them): the unfused pieces, H kept after its bias
    Workload.transformer(2, 5, 36, 6, ffn=20, dropout=0.2, bias_gelu_fusion=False, bias_dropout_fusion=False),
]


def relative_error(value: np.ndarray, expected: np.ndarray) -> float:
    """max |value - expected| / max |expected|, the interpreter's measure."""
    return float(np.max(np.abs(value - expected))) / (float(np.max(np.abs(expected))) or 1.0)


# -- the mask kernel on its own (no torch) -----------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.2, 0.5, 0.9])
def test_the_mask_drops_about_p_of_the_elements(p: float) -> None:
    n = 200_000
    kept = keep_mask(7, 0, p, np.arange(n, dtype=np.int64))
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs((1 - kept.mean()) - p) < 5 * sigma, (kept.mean(), p)


def test_the_mask_at_p_0_keeps_everything_and_dropout_scales_the_kept_by_1_over_1_minus_p() -> None:
    index = np.arange(10_000, dtype=np.int64)
    assert keep_mask(3, 1, 0.0, index).all()
    x = random_block(3, "x", (100, 100), (0, 100), (0, 100)) + 2.0  # no zeros: a dropped element is exactly 0
    y = dropout(x, seed=3, stream=1, p=0.25, row0=0, col0=0, width=100)
    kept = keep_mask(3, 1, 0.25, block_index(100, 100, 0, 0, 100))
    np.testing.assert_array_equal(y[~kept], 0.0)
    np.testing.assert_allclose(y[kept], x[kept] / 0.75, rtol=1e-15)


@pytest.mark.parametrize("a, b", [((1, 0), (2, 0)), ((1, 0), (1, 1)), ((1, 1), (1, 2)), ((1, 0), (1, 2)),
                                  ((0, 0), (2**32, 0))])
def test_masks_differ_between_seeds_and_streams(a: tuple[int, int], b: tuple[int, int]) -> None:
    """Two (seed, stream) pairs agree on about p^2 + (1-p)^2 of the elements, as independent masks do.
    (Seeds are taken modulo 2^32, so 0 and 2^32 are the one pair expected to agree everywhere.)"""
    p, n = 0.3, 100_000
    index = np.arange(n, dtype=np.int64)
    agree = (keep_mask(*a, p, index) == keep_mask(*b, p, index)).mean()
    if a[1] == b[1] and (a[0] - b[0]) % 2**32 == 0:
        assert agree == 1.0
        return
    expected = p * p + (1 - p) * (1 - p)
    assert abs(agree - expected) < 0.01, (a, b, agree)


def test_a_block_of_a_dropout_is_the_same_block_of_the_whole_tensor_s_dropout() -> None:
    """A mask element depends on the global index alone, so a rank's block drops what the dense tensor does."""
    x = random_block(9, "x", (12, 10), (0, 12), (0, 10))
    whole = dropout(x, seed=9, stream=2, p=0.4, row0=0, col0=0, width=10)
    block = dropout(x[3:8, 4:9], seed=9, stream=2, p=0.4, row0=3, col0=4, width=10)
    np.testing.assert_array_equal(block, whole[3:8, 4:9])


# -- the oracle ---------------------------------------------------------------------------------------
def _keep(torch, seed: int, stream: int, p: float, shape: tuple[int, ...]):
    """The mask times 1/(1-p) for a tensor of ``shape``, indices row-major over the whole tensor."""
    index = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    return torch.from_numpy(keep_mask(seed, stream, p, index).astype(np.float64)) / (1.0 - p)


def torch_block(w: Workload, seed: int) -> dict[str, np.ndarray]:
    """Y, every intermediate the forward makes, dX and every parameter gradient, from torch autograd."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    shapes = w.shapes()
    b, s, a, h, p = w.batch, w.seq, w.heads, w.hidden, w.dropout
    d = h // a

    def seeded(name: str, requires_grad: bool = True):
        rows, cols = shapes[name]
        value = w.input_block(seed, name, (0, rows), (0, cols))
        return torch.tensor(value, dtype=torch.float64, requires_grad=requires_grad)

    params = {name: seeded(name) for name in ("ln1_g", "ln1_b", "Wqkv", "bqkv", "Wproj", "bproj",
                                              "ln2_g", "ln2_b", "W1", "b1", "W2", "b2")}
    x = seeded("X")

    def layer_norm(value, gamma, beta):
        return F.layer_norm(value, (h,), gamma.reshape(h), beta.reshape(h), eps=1e-5)

    def moments(value):
        return torch.stack([value.sum(dim=1), (value * value).sum(dim=1)], dim=1)

    act = {"X": x, "S1": moments(x)}
    act["A1"] = layer_norm(x, params["ln1_g"], params["ln1_b"])
    act["QKV"] = act["A1"] @ params["Wqkv"] + params["bqkv"]
    keep_attention = _keep(torch, seed, STREAM_ATTENTION, p, (b, a, s, s))
    causal = torch.ones(s, s, dtype=torch.bool).triu(1)
    rows = []
    for seq in range(b):
        qkv = act["QKV"][seq * s:(seq + 1) * s]
        heads = []
        for j in range(a):
            q, k, v = (qkv[:, (3 * j + i) * d:(3 * j + i + 1) * d] for i in range(3))
            scores = (q @ k.T / math.sqrt(d)).masked_fill(causal, float("-inf"))
            probs = torch.softmax(scores, dim=-1) * keep_attention[seq, j]
            heads.append(probs @ v)
        rows.append(torch.cat(heads, dim=1))
    act["CTX"] = torch.cat(rows, dim=0)
    act["P"] = act["CTX"] @ params["Wproj"] + params["bproj"]
    act["PD"] = act["P"] * _keep(torch, seed, STREAM_PROJ, p, (w.m, h))
    act["X2"] = x + act["PD"]
    act["S2"] = moments(act["X2"])
    act["A2"] = layer_norm(act["X2"], params["ln2_g"], params["ln2_b"])
    act["H0"] = act["A2"] @ params["W1"]  # FC1 before its bias: what the fused bias-GeLU saves as H
    act["H"] = act["H0"] + params["b1"]
    act["Z"] = F.gelu(act["H"], approximate="tanh")
    act["F"] = act["Z"] @ params["W2"] + params["b2"]
    act["FD"] = act["F"] * _keep(torch, seed, STREAM_FC2, p, (w.m, h))
    act["Y"] = act["X2"] + act["FD"]
    act["Y"].backward(seeded("dY", requires_grad=False))
    out = {name: value.detach().numpy() for name, value in act.items()}
    out.update({grad(name): leaf.grad.numpy() for name, leaf in {"X": x, **params}.items()})
    return out


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.label())
def test_every_output_of_the_reference_equals_torch_autograd(workload: Workload) -> None:
    seed = 13
    expected = torch_block(workload, seed)
    reference = workload.reference(seed, "both")
    assert set(reference) == set(workload.output_names("both"))
    assert set(reference) == {"Y", "dX", *(grad(name) for name in workload.weights())}
    errors = {name: relative_error(value, expected[name]) for name, value in reference.items()}
    assert max(errors.values()) <= 1e-12, errors
    for passes in ("fwd", "bwd"):
        for name, value in workload.reference(seed, passes).items():
            np.testing.assert_array_equal(value, reference[name])


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.label())
def test_the_saved_activations_are_the_forward_s_intermediates(workload: Workload) -> None:
    seed = 21
    expected = torch_block(workload, seed)
    saved = workload.saved_activations()
    assert set(saved) == {"S1", "A1", "QKV", "CTX", "X2", "S2", "A2", "H", "Z"}
    if workload.bias_gelu_fusion:  # Megatron-LM's fused bias-GeLU keeps FC1's output before the bias
        expected = {**expected, "H": expected["H0"]}
    shapes = workload.shapes()
    errors = {}
    for name in saved:
        rows, cols = shapes[name]
        value = workload.input_block(seed, name, (0, rows), (0, cols))
        assert value.shape == expected[name].shape, name
        errors[name] = relative_error(value, expected[name])
    assert max(errors.values()) <= 1e-12, errors
    rows, cols = shapes["QKV"]  # and a block of one is that block of the whole
    block = workload.input_block(seed, "QKV", (rows // 3, rows), (cols // 3, cols))
    np.testing.assert_array_equal(block, workload.input_block(seed, "QKV", (0, rows), (0, cols))[rows // 3:,
                                                                                                 cols // 3:])


def test_dropout_changes_every_output() -> None:
    """The dropout cases are not the p = 0 case by accident: the masks reach every output."""
    plain, dropped = WORKLOADS[0], WORKLOADS[1]
    a, b = plain.reference(13, "both"), dropped.reference(13, "both")
    differences = {name: relative_error(b[name], a[name]) for name in a}
    assert min(differences.values()) > 1e-3, differences


@pytest.mark.parametrize("sequences_per_chunk", [1, 2, 3])
def test_the_values_by_token_chunks_equal_the_dense_reference(sequences_per_chunk: int) -> None:
    """``graph.values_by_chunks`` (whole sequences per chunk, weight gradients summed, dropout masks at
    the chunk's global rows) gives what one dense pass does, for every output and saved activation."""
    workload, seed = WORKLOADS[3], 17  # 3 sequences, dropout 0.2
    wanted = (*workload.output_names("both"), *workload.saved_activations())
    chunks = values_by_chunks(workload, numpy_call(seed),
                              lambda name, rows, cols: workload.input_block(seed, name, rows, cols),
                              sequences_per_chunk * workload.seq, wanted, True, np.zeros, np.concatenate)
    dense = dense_graph_values(workload, seed)
    errors = {name: relative_error(chunks[name], dense[name]) for name in wanted}
    assert max(errors.values()) <= 1e-12, errors
