"""The measured records calibration fits: one collective or one gemm, with its time.

Sizes follow nccl-tests' S: the buffer for broadcast, reduce and all_reduce, the output for
all_gather, the input for reduce_scatter, the message for a point-to-point ``send`` (ranks = 2).
A collective sample ran on the calibrated topology's first ``ranks`` GPUs, as ``tpsim collective``
places them.

Example::

    >>> CollectiveSample("all_reduce", 8, 1 << 20, 72.53e-6, "all_reduce_perf_8gpu.log").kind
    'all_reduce'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.errors import InputError

__all__ = ["CollectiveSample", "GemmSample", "COLLECTIVE_KINDS", "GEMM_DTYPES"]

COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send")
GEMM_DTYPES = ("float64", "float32", "bfloat16", "float16")


def _positive_int(owner: str, name: str, value) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise InputError(f"{owner}.{name} must be an integer >= 1, got {value!r}")


def _positive_time(owner: str, value) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise InputError(f"{owner}.time_s must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class CollectiveSample:
    """One measured collective (or send) of ``nbytes`` on ``ranks`` ranks."""

    kind: str
    """all_reduce, all_gather, reduce_scatter, broadcast, reduce, or send (point-to-point, ranks = 2)."""
    ranks: int
    """Group size; the ranks ran on the topology's first ``ranks`` GPUs."""
    nbytes: int
    """nccl-tests S in bytes (see the module docstring)."""
    time_s: float
    """Measured time of one collective, seconds."""
    source: str = ""
    """Where the measurement comes from (a file name), for notes and messages."""

    def __post_init__(self) -> None:
        if self.kind not in COLLECTIVE_KINDS:
            raise InputError(f"CollectiveSample.kind must be one of {', '.join(COLLECTIVE_KINDS)}, got {self.kind!r}")
        _positive_int("CollectiveSample", "ranks", self.ranks)
        if self.kind == "send" and self.ranks != 2:
            raise InputError(f"CollectiveSample: a send has ranks = 2 (source, destination), got {self.ranks}")
        if not (isinstance(self.nbytes, int) and not isinstance(self.nbytes, bool) and self.nbytes >= 0):
            raise InputError(f"CollectiveSample.nbytes must be an integer >= 0, got {self.nbytes!r}")
        _positive_time("CollectiveSample", self.time_s)


@dataclass(frozen=True)
class GemmSample:
    """One measured gemm ``out[m, n] = a[m, k] @ b[k, n]`` on one rank."""

    m: int
    """Rows of a and of the output."""
    k: int
    """The contracted extent."""
    n: int
    """Columns of b and of the output."""
    dtype: str
    """float64, float32, bfloat16 or float16."""
    time_s: float
    """Measured time of one gemm, seconds."""
    concurrent: int = 1
    """How many ranks ran this gemm at once on the same host (on an oversubscribed CPU host it matters)."""
    after_comm: bool = False
    """Measured right after a communication op, with other ranks still communicating (``tpsim bench
    --form interleaved``); fits ``gemm_efficiency_after_comm`` (``simulator.compute``)."""
    source: str = ""
    """Where the measurement comes from (a file name)."""

    def __post_init__(self) -> None:
        for name in ("m", "k", "n", "concurrent"):
            _positive_int("GemmSample", name, getattr(self, name))
        if self.dtype not in GEMM_DTYPES:
            raise InputError(f"GemmSample.dtype must be one of {', '.join(GEMM_DTYPES)}, got {self.dtype!r}")
        _positive_time("GemmSample", self.time_s)

    @property
    def flops(self) -> float:
        """2 m k n."""
        return 2.0 * self.m * self.k * self.n
