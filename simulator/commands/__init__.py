"""The ``tpsim`` sub-commands of the simulator, one module each; ``simulator.cli`` registers them.

====================  ===============================================================================
module                what it holds
====================  ===============================================================================
``schedule_args``     the schedule arguments shared by schedule, verify, simulate and run
``pipeline_args``     their pipeline options (--pp, --micro-batches, --schedule ORDER, --virtual-stages)
``pipeline_show``     a pipelined step's summary line, stage x time grid and proof printout
``sim_args``          topology, placement and collective overrides, shared by simulate and predict
``training_args``     optimizer, ZeRO, recomputation and data-parallel flags: a training setup
``defaults``          ``--gpus`` from the topology, ``run --nproc`` from the schedule, where left out
``lazy``              every sub-command's name, module and help: ``tpsim`` imports only the one it runs
``predict``           ``tpsim predict``: every arrangement ranked (the main job)
``predict_training``  ``tpsim predict --global-batch``: the whole model's tensor x data parallel plan
``sweep``             ``tpsim sweep``: a grid of training plans, one row each (``simulator.sweep``)
``schedule``          ``tpsim schedule`` and ``tpsim verify``
``model``             ``tpsim model list``: the published model presets, as a table or JSON
``simulate``          ``tpsim simulate``: one schedule on one topology
``collective``        ``tpsim collective``: one collective, or an nccl-tests-style sweep
``export``            ``tpsim export --chakra``: a schedule as Chakra execution traces
``calibrate``         ``tpsim calibrate``: fit a topology to bench or nccl-tests measurements
``calibrate_steps``   ``tpsim calibrate --from-steps``: gemm_efficiency fitted to measured training steps
``compare``           ``tpsim compare``: a measured run against its simulation
====================  ===============================================================================

``tpsim topology`` lives in ``topologies.command``; ``tpsim run`` and ``tpsim bench`` in ``executor``.
"""

__all__ = ["calibrate", "calibrate_steps", "collective", "compare", "defaults", "export", "lazy", "model", "pipeline_args",
           "pipeline_show", "predict", "predict_training", "schedule", "schedule_args", "sim_args", "simulate", "sweep",
           "training_args"]
