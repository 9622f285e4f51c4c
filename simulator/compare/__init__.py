"""Simulated against measured: re-simulate a measured run's schedule and set the two side by side.

==================  ===============================================================================
module              what it holds
==================  ===============================================================================
``measured``        loading a measured run and ``compare_record``: per op class and end to end
``record_checks``   a measured record's times and op records, checked before anything is compared
``peer_wait``       how long each op waited for its last peer, from per-op records on one clock
``plot``            the paired bars of ``tpsim compare --png``
``trace``           one Chrome trace with the measured and the simulated run side by side
==================  ===============================================================================
"""

__all__ = ["measured", "record_checks", "peer_wait", "plot", "trace"]
