"""A step's communication per kind, split into exposed (on the critical path) and hidden (under compute).

Kinds: "tp" (the tensor-parallel collectives of the passes), "dp" (the gradient reduction), "zero_gather"
(ZeRO's parameter all-gathers), "pp" (the sends between pipeline stages). Exposed is what the step's time
includes: ``StepTime.tp_comm_s``, ``dp_comm_s`` split into the reduction and the all-gathers
(``zero_gather_s``), ``pp_comm_s``. Hidden is what ran beside compute (``StepTime.hidden``):

- tp: per pass, the critical rank's collectives' time less the time it was blocked on them
  (``simulator.training.step._time``): Megatron-LM's asynchronous dX communication beside the dW GEMM;
- dp: the reduction's time alone (its buckets back to back) less what of it runs past the backward (not
  split out for pipelines, whose ``StepTime`` carries only the TP part);
- zero_gather: ZeRO-3's all-gather in each pass, up to that pass's compute; ZeRO-1/2's after the update
  is all exposed;
- pp: not split out (the pipeline model reports what the sends add to the makespan, ``pp_comm_s``).

exposed + hidden = total for every kind, by construction.
"""

from __future__ import annotations

__all__ = ["KINDS", "breakdown"]

KINDS = ("tp", "dp", "zero_gather", "pp")


def breakdown(step) -> dict:
    """{kind: {"exposed_s", "hidden_s", "total_s"}} of a ``simulator.training.step.StepTime``, seconds per step."""
    exposed = {"tp": step.tp_comm_s, "dp": step.dp_comm_s - step.zero_gather_s, "zero_gather": step.zero_gather_s,
               "pp": step.pp_comm_s}
    out = {}
    for kind in KINDS:
        hidden = step.hidden.get(kind, 0.0)
        out[kind] = {"exposed_s": exposed[kind], "hidden_s": hidden, "total_s": exposed[kind] + hidden}
    return out
