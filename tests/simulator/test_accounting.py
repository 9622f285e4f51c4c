"""The IR's accounting against the closed forms.

SUMMA2.5 per linear, forward + backward, on [q, q, d]: 6q collectives on q-rank groups plus one depth
all-reduce when d > 1; each rank's buffers in them sum to 3q (M K/(d q^2) + K N/q^2) elements, plus
K N/q^2 for the depth all-reduce; d = 1 is 2-D SUMMA.
"""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.schedule import DTYPE_BYTES
from simulator.workloads.workload import Workload


@pytest.mark.parametrize("q, d", [(1, 1), (2, 1), (3, 1), (2, 2), (2, 4), (4, 2), (3, 3), (4, 4)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tesseract_per_linear_closed_form(q: int, d: int, dtype: str) -> None:
    """6q collectives on q-rank groups, + 1 depth all-reduce; payload 3q(MK/(dq^2) + KN/q^2) + [d>1] KN/q^2."""
    m, k, n = d * q * 6, q * 4, q * 2
    schedule = build_schedule("summa25d", Workload.gemm(m, k, n), "both", dtype, grid=(q, q, d))
    elements = 3 * q * (m * k // (d * q * q) + k * n // (q * q)) + (k * n // (q * q) if d > 1 else 0)
    for acct in account(schedule):
        assert acct.collectives == 6 * q + (d > 1)
        expected_kinds = {f"broadcast/{q}": 4 * q, f"reduce/{q}": 2 * q}
        if d > 1:
            expected_kinds[f"all_reduce/{d}"] = 1
        assert dict(acct.collectives_by_kind) == expected_kinds
        assert acct.payload_bytes == elements * DTYPE_BYTES[dtype]
        assert acct.p2p_messages == 0


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_depth_one_is_2d_summa(q: int) -> None:
    workload = Workload.mlp(q * 4, q * 2)
    tesseract = build_schedule("summa25d", workload, "both", grid=(q, q, 1))
    summa = build_schedule("2d", workload, "both", grid=(q, q, 1))
    assert [a.to_dict() for a in account(tesseract)] == [a.to_dict() for a in account(summa)]
    assert tesseract.programs == summa.programs


@pytest.mark.parametrize("algorithm, grid", [("1d", {"gpus": 1}), ("1d", {"gpus": 4}), ("2d", {"grid": (2, 2, 1)}),
                                             ("summa25d", {"grid": (2, 2, 2)}), ("summa25d", {"grid": (3, 3, 3)})])
def test_flops_sum_to_2mkn_per_product(algorithm: str, grid: dict) -> None:
    m, k, n = 36, 12, 24
    gemm = build_schedule(algorithm, Workload.gemm(m, k, n), "both", **grid)
    assert sum(a.gemm_flops for a in account(gemm)) == 3 * 2 * m * k * n
    h = 12
    mlp = build_schedule(algorithm, Workload.mlp(m, h), "fwd", **grid)
    assert sum(a.gemm_flops for a in account(mlp)) == 2 * (2 * m * h * 4 * h)


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_megatron_moves_one_activation_all_reduce_each_way(p: int) -> None:
    m, h = 16, 8
    for acct in account(build_schedule("1d", Workload.mlp(m, h), "both", "float32", gpus=p)):
        assert dict(acct.collectives_by_kind) == {f"all_reduce/{p}": 2}
        assert acct.payload_bytes == 2 * m * h * 4
    for acct in account(build_schedule("1d", Workload.gemm(m, 6, 8), "fwd", gpus=p)):
        assert acct.collectives == 0  # column-parallel forward: no communication


def test_depth_trades_activation_traffic_for_weight_traffic() -> None:
    """At fixed p = 64 with b s >> h, [4,4,4] moves fewer bytes per rank than [8,8,1] (the 2.5-D argument)."""
    workload = Workload.mlp(64 * 256, 256)
    flat = account(build_schedule("summa25d", workload, "both", grid=(8, 8, 1)))[0].payload_bytes
    deep = account(build_schedule("summa25d", workload, "both", grid=(4, 4, 4)))[0].payload_bytes
    assert deep < flat
