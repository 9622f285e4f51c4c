"""The two workloads tpsim plans: one linear layer (``gemm``) and a transformer MLP (``mlp``).

Tensor names (rows x columns):

- ``gemm``: forward C = A B with A [M, K], B [K, N]; backward dA = dC B^T, dB = A^T dC.
- ``mlp`` on [M, h] tokens: H = X W1 (W1 [h, 4h]), Z = gelu(H), Y = Z W2 (W2 [4h, h]); backward from dY:
  dZ = dY W2^T, dW2 = Z^T dY, dH = dZ * gelu'(H), dX = dH W1^T, dW1 = X^T dH.

A backward-only schedule takes the forward's saved activations (H and Z) as inputs, in the layout the
forward leaves them in. GELU is the tanh approximation, as ``torch.nn.functional.gelu(approximate="tanh")``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simulator.errors import InputError
from simulator.workloads.tensors import random_block

PASSES = ("fwd", "bwd", "both")
FIELDS = {"gemm": ("m", "k", "n"), "mlp": ("m", "hidden")}
"""The sizes each workload's ``to_dict`` form stores."""
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def gelu_grad(x: np.ndarray) -> np.ndarray:
    """d gelu(x) / dx for the tanh approximation."""
    t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x * x)


@dataclass(frozen=True)
class Workload:
    """A workload and its sizes: ``gemm`` uses m, k, n; ``mlp`` uses m and hidden (k = n = hidden)."""

    name: str
    m: int
    k: int
    n: int

    def __post_init__(self) -> None:
        if self.name not in ("gemm", "mlp"):
            raise InputError(f"unknown workload {self.name!r}; valid: gemm, mlp")
        for label, value in (("M", self.m), ("K", self.k), ("N", self.n)):
            if value < 1:
                raise InputError(f"workload size {label} must be >= 1, got {value}")
        if self.name == "mlp" and self.k != self.n:
            raise InputError(f"mlp has one hidden size: k = n = hidden, got k={self.k}, n={self.n}")

    @classmethod
    def gemm(cls, m: int, k: int, n: int) -> "Workload":
        return cls("gemm", m, k, n)

    @classmethod
    def mlp(cls, m: int, hidden: int) -> "Workload":
        return cls("mlp", m, hidden, hidden)

    @classmethod
    def from_dict(cls, data: dict) -> "Workload":
        """Inverse of ``to_dict``; ValueError naming a missing, unknown or non-integer field."""
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or name not in FIELDS:
            valid = "; ".join(f"{n} ({', '.join(fields)})" for n, fields in FIELDS.items())
            raise InputError(f"workload {data!r}: expected a name and sizes, one of {valid}")
        fields = FIELDS[name]
        missing = [f for f in fields if f not in data]
        if missing:
            raise InputError(f"workload {name} needs {', '.join(fields)}; missing: {', '.join(missing)}")
        unknown = sorted(set(data) - set(fields) - {"name"})
        if unknown:
            raise InputError(f"workload {name} has no field {unknown[0]!r}; fields: {', '.join(fields)}")
        for f in fields:
            if not isinstance(data[f], numbers.Integral) or isinstance(data[f], bool):  # numpy ints are sizes too
                raise InputError(f"workload {name} field {f!r} must be an integer, got {data[f]!r}")
        if name == "mlp":
            return cls.mlp(int(data["m"]), int(data["hidden"]))
        return cls(name, int(data["m"]), int(data["k"]), int(data["n"]))

    def to_dict(self) -> dict:
        """The form stored in a Schedule's ``workload`` field."""
        if self.name == "mlp":
            return {"name": "mlp", "m": self.m, "hidden": self.k}
        return {"name": "gemm", "m": self.m, "k": self.k, "n": self.n}

    @property
    def hidden(self) -> int:
        return self.k

    def label(self) -> str:
        """``gemm M=16 K=8 N=4`` or ``mlp M=16 H=8``: the workload as its command-line sizes."""
        if self.name == "mlp":
            return f"mlp M={self.m} H={self.k}"
        return f"gemm M={self.m} K={self.k} N={self.n}"

    def shapes(self) -> dict[str, tuple[int, int]]:
        """Global shape of every tensor the workload names."""
        m, k, n = self.m, self.k, self.n
        if self.name == "gemm":
            return {"A": (m, k), "B": (k, n), "C": (m, n), "dC": (m, n), "dA": (m, k), "dB": (k, n)}
        h, f = k, 4 * k
        return {"X": (m, h), "W1": (h, f), "W2": (f, h), "H": (m, f), "Z": (m, f), "Y": (m, h),
                "dY": (m, h), "dZ": (m, f), "dH": (m, f), "dX": (m, h), "dW1": (h, f), "dW2": (f, h)}

    def input_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` starts from."""
        _check_pass(passes)
        if self.name == "gemm":
            return {"fwd": ("A", "B"), "bwd": ("A", "B", "dC"), "both": ("A", "B", "dC")}[passes]
        return {"fwd": ("X", "W1", "W2"), "bwd": ("X", "W1", "W2", "H", "Z", "dY"),
                "both": ("X", "W1", "W2", "dY")}[passes]

    def output_names(self, passes: str) -> tuple[str, ...]:
        """Tensors a schedule of ``passes`` produces."""
        _check_pass(passes)
        fwd, bwd = (("C",), ("dA", "dB")) if self.name == "gemm" else (("Y",), ("dX", "dW1", "dW2"))
        return {"fwd": fwd, "bwd": bwd, "both": fwd + bwd}[passes]

    def input_block(self, seed: int, name: str, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        """Block of an input tensor from the seed alone; saved activations H, Z from row/column panels."""
        shapes = self.shapes()
        if name in ("H", "Z"):
            x = random_block(seed, "X", shapes["X"], rows, (0, self.k))
            w1 = random_block(seed, "W1", shapes["W1"], (0, self.k), cols)
            h = x @ w1
            return h if name == "H" else gelu(h)
        return random_block(seed, name, shapes[name], rows, cols)

    def reference(self, seed: int, passes: str) -> dict[str, np.ndarray]:
        """Every output of ``passes`` computed densely in float64 (cached per seed)."""
        return {name: _dense_reference(self, seed)[name] for name in self.output_names(passes)}


def _check_pass(passes: str) -> None:
    if passes not in PASSES:
        raise InputError(f"unknown pass {passes!r}; valid: {', '.join(PASSES)}")


@lru_cache(maxsize=8)
def _dense_reference(workload: Workload, seed: int) -> dict[str, np.ndarray]:
    shapes = workload.shapes()
    full = {name: random_block(seed, name, shape, (0, shape[0]), (0, shape[1])) for name, shape in shapes.items()}
    if workload.name == "gemm":
        a, b, dc = full["A"], full["B"], full["dC"]
        return {"C": a @ b, "dA": dc @ b.T, "dB": a.T @ dc}
    x, w1, w2, dy = full["X"], full["W1"], full["W2"], full["dY"]
    h = x @ w1
    z = gelu(h)
    dh = (dy @ w2.T) * gelu_grad(h)
    return {"Y": z @ w2, "dX": dh @ w1.T, "dW1": x.T @ dh, "dW2": z.T @ dy}
