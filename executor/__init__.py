"""The reference executor: runs a tpsim Schedule under torch.distributed, checks it, and times it.

The same code path serves gloo (CPU tensors) and NCCL (one GPU per rank). ``tpsim run`` forks its
own local ranks (``executor.launch``); ``torchrun -m executor -- <args>`` runs one rank per process under
torchrun's rendezvous, multi-node included (``executor.__main__``).

===================  ==========================================================================
module               what it does
===================  ==========================================================================
``groups``           creates every declared process group, in the schedule's order, on every rank
``buffers``          allocates buffers from the declarations; fills inputs from the seed
``ops_torch``        the one module that turns IR ops into torch / torch.distributed calls
``clock``            perf_counter (CPU) and CUDA-event (GPU) clocks for per-op timing
``reference``        float64 reference of an output block: panels and chunks, or token chunks
``reference_memory`` the memory that reference holds per block, counted from shapes without torch
``check``            per-rank errors against the reference, tolerances per dtype
``pipeline_check``   a pipelined step's input blocks and its whole-step float64 reference
``memory``           what a run holds per rank, estimated up front; the refusal when it cannot fit
``preflight``        what decides whether ``tpsim run`` can start, checked before torch is imported
``run_rank``         one rank's job: rendezvous, groups, warm-up and timed iterations, check, gather
``faults``           the ``--inject-fault`` test hook
``progress``         a shared-memory board of where each local rank is (for timeout reports)
``launch``           forks N local ranks with a FileStore rendezvous, watches them, stops them on a failure
``scratch``          the launcher's temporary folder, its owner recorded; stale ones swept
``estimate``         a CPU run's arithmetic time at this host's measured gemm rate (refused past --timeout)
``job_report``       what a failed or timed-out job reports: the real cause first, where ranks were
``measure``          the measured-run JSON and the Chrome trace
``command``          ``tpsim run`` (registered without importing torch)
``bench_cases``      the microbenchmark schedules of ``tpsim bench``
``bench``            what each rank runs under ``tpsim bench``
``bench_report``     the bench record and its nccl-tests-style tables
``bench_command``    ``tpsim bench`` (registered without importing torch)
``__main__``         ``torchrun -m executor`` / ``python -m executor``
``heartbeat``        each forked rank's heartbeat thread, so a stopped or frozen rank is named at the timeout
``bench_memory``     a bench's memory estimate, checked before torch is imported
``bench_time``       a bench's least time from its cases and repetitions, held against --timeout up front
===================  ==========================================================================

Importing this package does not import torch; only running does.
"""

__all__ = ["bench", "bench_cases", "bench_command", "bench_memory", "bench_time", "heartbeat", "bench_report", "buffers", "check", "clock", "command", "estimate",
           "faults", "groups", "job_report", "launch", "measure", "memory", "ops_torch", "pipeline_check", "preflight", "progress", "reference",
           "reference_memory", "run_rank", "scratch"]
