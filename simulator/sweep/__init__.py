"""`tpsim sweep`: a grid of training plans run on local processes or a Dask cluster, one row per plan.

==================  ===========================================================================
``spec``            the YAML spec: axes and fixed options, their Cartesian product, the spec hash
``checks``          every key and value against `tpsim predict`'s parser and checks, before any work
``plans``           each plan's number, input cells and predict arguments; the output columns
``plan_run``        one plan through predict's command line, reduced to one row with a status
``executor``        the interface: results as calls finish; ``make_executor`` picks one
``local_pool``      the default executor: forked processes on this machine
``dask_cluster``    Dask distributed, a local cluster or a scheduler's address (the ``cluster`` extra)
``journal``         the row-by-row, fsynced CSV that makes a killed sweep resume
``output``          CSV, or Parquet converted at the end (with pyarrow)
``runner``          the loop: plans to the executor, rows to the journal
==================  ===========================================================================

The command is ``simulator.commands.sweep``.
"""

__all__ = []  # the command imports the modules it needs; the package itself exports nothing
