"""Timing a schedule: compile it, play it on the simpy engine, or walk it with closed forms.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``plan``            a Schedule compiled for timing: per-rank items, shared communication instances
``engine``          the simpy engine: one process per rank walking its plan
``simulation``      ``simulate``: a schedule on a topology, the flow network as the backend
``critical_path``   the contention-free analytic model (``analyze``): a critical-path walk
``sm_sharing``      what a GEMM beside an asynchronous collective loses to NCCL's channels on its SMs
``solo_bound``      a cheaper lower bound: a few ranks walked alone, every peer on time
``results``         ``SimResult``: makespan, per rank, per link and per op
``parts``           time per layer part (qkv, attn, fc1, ...): a rank's split op by op
``trace``           Chrome / Perfetto trace files (the executor writes the same format)
``link_sampler``    sampled link utilisation for the trace's counter tracks
``kineto``          a communication op's trace arguments under the PyTorch profiler's names
==================  ===============================================================================
"""

__all__ = ["critical_path", "engine", "kineto", "link_sampler", "parts", "plan", "results", "simulation", "sm_sharing",
           "solo_bound", "trace"]
