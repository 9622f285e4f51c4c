"""Pipeline parallelism: schedules as data, their replay and validation, closed forms, and printout.

==================  ================================================================================
module              what it holds
==================  ================================================================================
``order``           ``pipeline_order``: each pipeline rank's (micro-batch, stage, F|B) actions for
                    GPipe, 1F1B and interleaved 1F1B; the size checks
``timeline``        ``replay``: start and end of every action given their times; the validator
                    (every send meets its receive, no deadlock); bubble and activations in flight
``closed_forms``    the published bubble, step time and activations-in-flight formulas
``printout``        the stage x time grid with micro-batch numbers
``stage_step``      a pipelined training step from block times: the replay, sends, per-stage DP
                    reduction, tied-embedding all-reduce, optimizer; the search's floor
``stage_memory``    memory per pipeline stage: its layers' states and the activations in flight
``search_space``    pipeline sizes, pipelined candidates and the schedules each tries in the planner
``trace``           a planned step as a Perfetto trace, a process per pipeline stage
==================  ================================================================================
"""

__all__ = ["closed_forms", "order", "printout", "search_space", "stage_memory", "stage_step", "timeline", "trace"]
