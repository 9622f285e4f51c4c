"""The Llama-family block's dense reference against an independent oracle: torch float64 autograd.

The oracle is written from torch's own ops and the layouts the kernels document, not from tpsim's
layer list or function table: RMSNorm as x * rsqrt(mean(x^2) + 1e-5) * g (Llama's ``RMSNorm``), the
QKV columns as whole key/value groups [Q_1 .. Q_r, K, V] of width d, rotary embeddings as a 2 x 2
rotation of the pair (i, i + d/2) by t * 10000^(-2i/d) built as an explicit matrix per position,
attention written out per sequence and query head with query head j reading key/value head j // r,
SwiGLU as ``silu`` of the even columns times the odd ones, and the residuals. Dropout is 0 (the GPT
oracle proves the masks; the interpreter proofs prove them on these blocks).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

WORKLOADS = [  # (workload, its architecture)
    Workload.transformer(2, 5, 24, 6, ffn=20, kv_heads=2, norm="rmsnorm", activation="swiglu", position="rotary",
                         bias=False),
    Workload.transformer(3, 4, 16, 4, ffn=12, kv_heads=1, norm="rmsnorm", activation="swiglu", position="rotary",
                         bias=False),   # multi-query
    Workload.transformer(2, 3, 24, 4, ffn=10, kv_heads=4, norm="rmsnorm", activation="swiglu", position="rotary",
                         bias=False),   # multi-head
    Workload.transformer(2, 4, 18, 6, ffn=14, kv_heads=3, norm="layernorm", activation="gelu", position="learned",
                         bias=True),    # GPT with grouped-query attention
]


def relative_error(value: np.ndarray, expected: np.ndarray) -> float:
    return float(np.max(np.abs(value - expected))) / (float(np.max(np.abs(expected))) or 1.0)


def rotation(torch, seq: int, d: int):
    """[s, d, d]: the matrix R_t with y = x R_t for a head row x at position t."""
    out = torch.zeros(seq, d, d, dtype=torch.float64)
    half = d // 2
    for t in range(seq):
        for i in range(half):
            angle = t * 10000.0 ** (-2.0 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            out[t, i, i], out[t, i + half, i] = c, -s          # y_i = x_i c - x_{i+h} s
            out[t, i + half, i + half], out[t, i, i + half] = c, s  # y_{i+h} = x_{i+h} c + x_i s
    return out


def torch_block(w: Workload, seed: int) -> dict[str, np.ndarray]:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    shapes = w.shapes()
    b, s, a, h, kv = w.batch, w.seq, w.heads, w.hidden, w.kv_heads
    d, r = h // a, a // kv

    def seeded(name: str, requires_grad: bool = True):
        rows, cols = shapes[name]
        return torch.tensor(w.input_block(seed, name, (0, rows), (0, cols)), dtype=torch.float64,
                            requires_grad=requires_grad)

    params = {name: seeded(name) for name in w.weights()}
    x = seeded("X")

    def norm(value, n: str):
        if w.norm == "rmsnorm":
            return value * torch.rsqrt((value * value).mean(dim=1, keepdim=True) + 1e-5) * params[f"{n}_g"]
        return F.layer_norm(value, (h,), params[f"{n}_g"].reshape(h), params[f"{n}_b"].reshape(h), eps=1e-5)

    def linear(value, weight: str, bias: str):
        return value @ params[weight] + (params[bias] if w.bias else 0.0)

    act = {"A1": norm(x, "ln1")}
    qkv = linear(act["A1"], "Wqkv", "bqkv")
    width = (r + 2) * d
    if w.position == "rotary":
        rot = rotation(torch, s, d)
        rows = []
        for t in range(b * s):
            pieces = []
            for g in range(kv):
                for j in range(r + 2):
                    head = qkv[t, g * width + j * d: g * width + (j + 1) * d]
                    pieces.append(head @ rot[t % s] if j <= r else head)
            rows.append(torch.cat(pieces))
        qkv = torch.stack(rows)
    causal = torch.ones(s, s, dtype=torch.bool).triu(1)
    out_rows = []
    for n in range(b):
        block = qkv[n * s:(n + 1) * s]
        heads = []
        for j in range(a):
            g = j // r
            q = block[:, g * width + (j % r) * d: g * width + (j % r + 1) * d]
            k = block[:, g * width + r * d: g * width + (r + 1) * d]
            v = block[:, g * width + (r + 1) * d: g * width + (r + 2) * d]
            probs = torch.softmax((q @ k.T / math.sqrt(d)).masked_fill(causal, float("-inf")), dim=-1)
            heads.append(probs @ v)
        out_rows.append(torch.cat(heads, dim=1))
    act["CTX"] = torch.cat(out_rows)
    act["X2"] = x + linear(act["CTX"], "Wproj", "bproj")
    act["A2"] = norm(act["X2"], "ln2")
    act["H0"] = act["A2"] @ params["W1"]  # FC1 before its bias: what the fused bias-GeLU keeps as H
    act["H"] = linear(act["A2"], "W1", "b1")
    if w.activation == "swiglu":
        act["Z"] = F.silu(act["H"][:, 0::2]) * act["H"][:, 1::2]
    else:
        act["Z"] = F.gelu(act["H"], approximate="tanh")
    act["Y"] = act["X2"] + linear(act["Z"], "W2", "b2")
    act["Y"].backward(seeded("dY", requires_grad=False))
    out = {name: value.detach().numpy() for name, value in act.items()}
    out.update({grad(name): leaf.grad.numpy() for name, leaf in {"X": x, **params}.items()})
    return out


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.label())
def test_every_output_and_intermediate_of_the_reference_equals_torch_autograd(workload: Workload) -> None:
    seed = 5
    expected = torch_block(workload, seed)
    reference = workload.reference(seed, "both")
    assert set(reference) == {"Y", "dX", *(grad(name) for name in workload.weights())}
    errors = {name: relative_error(value, expected[name]) for name, value in reference.items()}
    shapes = workload.shapes()
    for name in ("A1", "CTX", "X2", "A2", "H", "Z"):
        rows, cols = shapes[name]
        fused = name == "H" and workload.activation == "gelu" and workload.bias and workload.bias_gelu_fusion
        errors[name] = relative_error(workload.input_block(seed, name, (0, rows), (0, cols)),
                                      expected["H0" if fused else name])
    assert max(errors.values()) <= 1e-12, errors


def test_rotary_changes_the_output_and_multi_query_is_not_multi_head() -> None:
    """The cases are not the GPT block by accident: rotation and grouping reach the output."""
    base = WORKLOADS[0]
    learned = Workload.transformer(2, 5, 24, 6, ffn=20, kv_heads=2, norm="rmsnorm", activation="swiglu", bias=False)
    assert relative_error(base.reference(5, "fwd")["Y"], learned.reference(5, "fwd")["Y"]) > 1e-3
    mha = Workload.transformer(2, 5, 24, 6, ffn=20, kv_heads=6, norm="rmsnorm", activation="swiglu",
                               position="rotary", bias=False)
    assert mha.shapes()["Wqkv"] == (24, 72) and base.shapes()["Wqkv"] == (24, 40)
