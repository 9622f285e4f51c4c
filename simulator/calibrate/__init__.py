"""Calibration: fit a topology's link and simulator parameters to measured collectives and gemms.

Public API::

    CollectiveSample(kind, ranks, nbytes, time_s, source="")       # samples.py
    GemmSample(m, k, n, dtype, time_s, concurrent=1, source="")
    samples_from_nccl_tests(paths) -> list[CollectiveSample]         # from_nccl_tests.py
    calibrate(base, collectives, gemms, *, holdout=None, ...) -> Calibration   # fit.py
    Calibration.graph / .parameters / .fit_rows / .holdout_rows / .write(path)

Files: ``samples`` (the measured records), ``from_nccl_tests`` (nccl-tests logs to samples),
``knobs`` (what is fitted and how a value lands on the graph), ``evaluator`` (the fast closed-form
predictions of the inner loop), ``gemm_fit`` (compute efficiency), ``holdout`` (fit / held-out
splits), ``rows`` (per-size-bucket error rows and their table), ``fit`` (the whole fit),
``result`` (``Calibration``). ``from_bench`` (bench JSON to samples) belongs to ``tpsim bench``.
"""

from simulator.calibrate.samples import CollectiveSample, GemmSample

__all__ = ["CollectiveSample", "GemmSample"]
