"""tpsim's simulator package: the schedule IR, the algorithms, the workloads, and timing them on a network.

A workload (what is computed) and an algorithm on a grid (how it is split) make a Schedule, the IR that
every consumer shares: the numpy interpreter proves it on numbers, the simulator times it on a
topology, the executor (``executor/``, torch) runs it.

=================  ============================================================================
sub-package        what it holds
=================  ============================================================================
``ir``             the Schedule and its ops, the builder, JSON, printout, validation, accounting,
                   and the numpy interpreter (the oracle)
``algorithms``     the registry, the process grid, compose, one module per algorithm (1-D Megatron,
                   2-D SUMMA, SUMMA2.5, Cannon 2.5-D) with its steps beside it
``workloads``      workloads as lists of layer records (one module per layer kind), the elementwise
                   function table, seeded tensors, the block evaluator (the dense float64 reference)
``network``        flows on routes, max-min fair sharing, flow groups
``collectives``    collectives as flows (NCCL's algorithms and protocols) and their closed forms
``timing``         the compiled plan, the simpy engine, ``simulate``, the contention-free critical
                   path, results and traces
``memory``         memory per GPU of training: model states, kept activations, workspace, peak
``compare``        a measured run against its simulation
``calibrate``      fitting a topology to measurements (bench records, nccl-tests logs)
``training``       whole-model training plans: tensor x data arrangements, buckets, the
                   data-parallel reduction, the time of one training step
``pipeline``       pipeline parallelism: GPipe, 1F1B and interleaved orders as data, their replay,
                   validation, closed forms and stage x time grid
``export``         schedules for other tools: Chakra execution traces (ASTRA-sim)
``sweep``          ``tpsim sweep``: a grid of training plans on local processes or a Dask cluster,
                   one row each, resumable
``guard``          estimates of a command's time and memory from the sizes, before any work (``--force``)
``commands``       one module per ``tpsim`` sub-command
=================  ============================================================================

At the top: ``cli`` (the ``tpsim`` entry point), ``api`` (the commands as Python functions returning
dataclasses, for notebooks), ``errors`` (``InputError``, ``NotApplicable``),
``sizes`` (byte sizes as people write them), ``fp8`` (``--dtype fp8``: the hybrid FP8 recipe as a
compute-model setting; ``fp8_cost``, Transformer Engine's casts around each FP8 GEMM, as memory passes; ``fp8_comm``, the gathers
it moves in FP8), ``limits`` (what tpsim and this machine accept before any
work starts: ranks, GPUs, tensor sizes, seeds, tolerances, file sizes, memory), ``compute`` (the compute
model; ``gemm_shape``, a GEMM's achievable fraction of peak by its shape), ``files`` (atomic writes, bounded reads and checked JSON records; ``output_paths``, what an output may be; ``command_files``, every command's outputs checked before any work), ``gcpause``, ``progress`` (a long
command's progress on stderr), ``simpy_internals`` (the one place simpy's private fields are touched), and
``predict`` / ``predict_plot`` (the main job: every arrangement simulated and ranked; with a global batch, the
whole model's training plan from ``training``). Topologies live
in the top-level ``topologies`` package.

To add an algorithm: one module in ``simulator/algorithms/`` with an ``Algorithm`` subclass, added to
``_CLASSES`` in ``simulator/algorithms/registry.py`` (its docstring says what the class provides).
To add a workload layer kind: one module in ``simulator/workloads/layers/`` (its docstring lists the
rules a layer kind gives; compose, the block evaluator and the executor's reference ask for them); a new elementwise function is one entry in
``simulator/workloads/functions.py``. To add a physical effect: link rates and latencies in
``topologies/`` (presets, ``rates.py``), sharing in ``simulator/network/``, collective algorithms in
``simulator/collectives/``, compute time in ``simulator/compute.py``.
"""

__all__ = ["algorithms", "api", "calibrate", "cli", "collectives", "command_files", "commands", "compare", "compute",
           "errors", "export", "output_paths",
           "files", "fp8", "fp8_comm", "fp8_cost", "gcpause", "gemm_shape", "guard", "ir", "limits", "memory", "network", "pipeline", "predict",
           "predict_plot", "progress", "simpy_internals",
           "sizes", "timing", "training", "workloads"]
