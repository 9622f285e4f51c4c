"""`tpsim sweep`: a grid of training plans run on local processes or a Dask cluster, one row per plan.

One concept per module: ``spec`` (the YAML spec and its Cartesian product), ``checks`` (every key and
value against `tpsim predict` before any work), ``plans`` (each plan's inputs and arguments, the
columns), ``plan_run`` (one plan through predict's command line, reduced to a row), ``executor`` (the
interface) with ``local_pool`` and ``dask_cluster``, ``journal`` (the row-by-row CSV that makes a
sweep resumable), ``output`` (CSV or Parquet), ``runner`` (the loop). The command is
``simulator.commands.sweep``.
"""
