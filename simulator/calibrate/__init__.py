"""Calibration: fit a topology's link and simulator parameters to measured collectives and gemms.

Public API::

    CollectiveSample(kind, ranks, nbytes, time_s, source="")       # samples.py
    GemmSample(m, k, n, dtype, time_s, concurrent=1, source="")
    samples_from_nccl_tests(paths) -> list[CollectiveSample]         # from_nccl_tests.py
    calibrate(base, collectives, gemms, *, holdout=None, ...) -> Calibration   # fit.py
    Calibration.graph / .parameters / .fit_rows / .holdout_rows / .write(path)
    Calibration.profile / .write_profile(path)   # topologies.profile: --calibration FILE anywhere
    read_steps(path) -> list[StepEntry]                              # steps_file.py
    timed_entry(entry, base, base_spec, calibration) -> TimedEntry   # step_timing.py
    fit_steps(timed_entries, holdout=True) -> StepsFit               # from_steps.py

===================  ==============================================================================
module               what it holds
===================  ==============================================================================
``samples``          the measured records: one collective or one gemm, with its time
``nccl_lines``       one line of nccl-tests output: launcher tags, NCCL's own lines, the test it names
``nccl_ranks``       the rank count of a log that lists none, read off its busbw / algbw
``nccl_columns``     the test a table is, read off its columns where nothing names it
``nccl_tests``       parsing nccl-tests output (all_reduce_perf, all_gather_perf, ...)
``from_nccl_tests``  nccl-tests logs as collective samples
``device_check``     a note where a log ran on another GPU family than the topology's
``enqueue_floor``    the host's floor under an nccl-tests time (one thread enqueues on its nGpus)
``from_bench``       a ``tpsim bench`` record as samples
``knobs``            what is fitted, its bounds, and how a value lands on the graph
``evaluator``        the fast closed-form predictions of the fit's inner loop
``lsq``              bounded least squares on log time over the knobs
``gemm_fit``         the compute fit: gemm efficiency from measured gemms
``holdout``          fit / held-out splits
``rows``             per-size-bucket error rows and their tables
``fit``              ``calibrate``: the whole fit and its check
``carry``            what a fit carries to other topologies: the profile, what stayed undetermined
``result``           ``Calibration``: the calibrated topology, the values, the rows, the file
``nccl_consistency`` nccl-tests rows cross-checked: size = count x element size, algbw, busbw, nGpus
``steps_file``       a file of measured training steps, each with its ``tpsim predict`` line
``step_timing``      one measured step's predict line, timed in-process at any ``gemm_efficiency``
``from_steps``       the step fit: ``gemm_efficiency`` from whole steps, and its leave-one-out check
``steps_profile``    what the step fit writes: the base with the fitted value, and its profile
===================  ==============================================================================
"""

from simulator.calibrate.samples import CollectiveSample, GemmSample

__all__ = ["CollectiveSample", "GemmSample"]
