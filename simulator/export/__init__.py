"""Schedules handed to other tools: Chakra execution traces (MLCommons) for ASTRA-sim and its kin.

==============  ==================================================================================
``nodes``       a Schedule as one Chakra node graph per rank (plain records; dependencies, sizes, tags)
``chains``      ``--lower-p2p``: a broadcast or reduce as a chunked chain of send/recv nodes
``times``       the durations the nodes carry: the compute model's and the simulated collectives'
``files``       the .et files and the communicator-group JSON, written with the ``mlc-chakra`` package
==============  ==================================================================================

Only ``files`` needs ``mlc-chakra`` (an optional extra, ``pip install 'tpsim[chakra]'``), and imports
it when it writes; the rest is plain Python, so the simulator still imports without it.
"""

__all__ = ["chains", "files", "nodes", "times"]
