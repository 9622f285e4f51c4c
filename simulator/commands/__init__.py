"""The ``tpsim`` sub-commands of the simulator, one module each; ``simulator.cli`` registers them.

====================  ===============================================================================
module                what it holds
====================  ===============================================================================
``schedule_args``     the schedule arguments shared by schedule, verify, simulate and run
``sim_args``          topology, placement and collective overrides, shared by simulate and predict
``training_args``     optimizer, ZeRO, recomputation and data-parallel flags: a training setup
``predict``           ``tpsim predict``: every arrangement ranked (the main job)
``predict_training``  ``tpsim predict --global-batch``: the whole model's tensor x data parallel plan
``schedule``          ``tpsim schedule`` and ``tpsim verify``
``model``             ``tpsim model list``: the published model presets, as a table or JSON
``simulate``          ``tpsim simulate``: one schedule on one topology
``collective``        ``tpsim collective``: one collective, or an nccl-tests-style sweep
``export``            ``tpsim export --chakra``: a schedule as Chakra execution traces
``calibrate``         ``tpsim calibrate``: fit a topology to bench or nccl-tests measurements
``compare``           ``tpsim compare``: a measured run against its simulation
====================  ===============================================================================

``tpsim topology`` lives in ``topologies.command``; ``tpsim run`` and ``tpsim bench`` in ``executor``.
"""

__all__ = ["calibrate", "collective", "compare", "export", "model", "predict", "predict_training", "schedule", "schedule_args",
           "sim_args", "simulate", "training_args"]
