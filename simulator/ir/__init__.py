"""The schedule IR: what every rank holds and does, as data; its checks, its accounting and its oracle.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``schedule``        ``Schedule``, ``BufferSpec``, ``TensorBlock``: groups, buffers, programs, blocks
``ops``             the op records (gemm, local, slice, collectives, send/recv, wait)
``builder``         ``ScheduleBuilder``: what generators use to declare buffers and emit ops
``serialize``       lossless JSON form of a Schedule and its loader
``printout``        the step x rank grid
``checks``          static checks, one rank at a time (declarations, shapes, handles, hazards)
``walk``            a lock-step walk of every rank under NCCL's matching rules
``validate``        checks + walk: a schedule is refused before anything runs it
``accounting``      collectives, payload bytes and FLOPs per rank, read off the IR
``interpret``       the numpy interpreter that proves a schedule on numbers
``file_header``     a schedule file's header checked: version, grid, programs
==================  ===============================================================================

Modules are imported by their full path (``from simulator.ir.schedule import Schedule``); importing
this package imports none of them.
"""

__all__ = ["accounting", "builder", "checks", "file_header", "interpret", "ops", "printout", "schedule", "serialize",
           "validate", "walk"]
