"""The pipeline's published closed forms: bubble, step time with equal stages, activations in flight.

With p pipeline ranks, m micro-batches, v virtual stages per rank, and t_f, t_b one micro-batch's forward
and backward through one rank's layers (all its chunks):

- GPipe and 1F1B: step = (m + p - 1)(t_f + t_b), bubble fraction (p - 1) / m of the ideal m (t_f + t_b)
  (Narayanan et al. 2021, arXiv 2104.04473, section 2.2.1);
- interleaved: step = (m + (p - 1) / v)(t_f + t_b), bubble (p - 1) / (m v) (section 2.2.2);
- activations in flight on pipeline rank r: 1F1B min(p - r, m) micro-batches, GPipe m; interleaved, on the
  first rank, p (1 + (p - 1) / (p v)) micro-batches' worth of the rank's layers (Korthikanti et al. 2022,
  arXiv 2205.05198, section 4.2.3), for m >= p.

``simulator.pipeline.timeline.replay`` meets these exactly when stages are equal and communication free;
the tests hold it to them.
"""

from __future__ import annotations

from simulator.pipeline.order import check_pipeline_sizes

__all__ = ["bubble_fraction", "ideal_step_s", "in_flight_micro_batches"]


def bubble_fraction(schedule: str, pp: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle time over the ideal busy time m (t_f + t_b): (p - 1) / m, or (p - 1) / (m v) interleaved."""
    check_pipeline_sizes(schedule, pp, micro_batches, virtual_stages)
    return (pp - 1) / (micro_batches * virtual_stages)


def ideal_step_s(schedule: str, pp: int, micro_batches: int, t_f: float, t_b: float,
                 virtual_stages: int = 1) -> float:
    """The step's compute with equal stages and free communication: (m + (p - 1) / v)(t_f + t_b)."""
    return micro_batches * (1 + bubble_fraction(schedule, pp, micro_batches, virtual_stages)) * (t_f + t_b)


def in_flight_micro_batches(schedule: str, pp: int, micro_batches: int, rank: int,
                            virtual_stages: int = 1) -> float:
    """Micro-batches' worth of rank ``rank``'s layers whose activations it keeps at the peak (module docstring);
    interleaved for the first rank only, where the paper derives it."""
    check_pipeline_sizes(schedule, pp, micro_batches, virtual_stages)
    if schedule == "gpipe":
        return float(micro_batches)
    if schedule == "1f1b":
        return float(min(pp - rank, micro_batches))
    if rank != 0:
        raise ValueError("the interleaved closed form is derived for the first pipeline rank only")
    return pp * (1 + (pp - 1) / (pp * virtual_stages)) if micro_batches > pp else float(micro_batches)
