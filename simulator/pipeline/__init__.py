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
``lower``           ``lower_pipeline``: a pipelined training step (pp stages x a tensor-parallel
                    algorithm, micro-batches, an order) as one Schedule with send/recv between stages
``block``           one block's schedule cut into forward, backward and the roles of its buffers
``head``            the LM head on the last stage, joined to the last block's output
``names``           the renaming of a block's buffers per (micro-batch, layer)
``templates``       a block op re-addressed per (micro-batch, layer, pipeline rank)
``tensors``         the step's global input and output tensors, by name
``reference``       the step's dense float64 reference
``proof``           the step run in the numpy interpreter against the reference
``stage_step``      a pipelined training step from block times: the replay, sends, per-stage DP
                    reduction, tied-embedding all-reduce, optimizer; the search's floor
``stage_memory``    memory per pipeline stage: its layers' states and the activations in flight
``search_space``    pipeline sizes, pipelined candidates and the schedules each tries in the planner
``trace``           a planned step as a Perfetto trace, a process per pipeline stage
==================  ================================================================================
"""

__all__ = ["block", "closed_forms", "head", "lower", "names", "order", "printout", "proof", "reference",
           "search_space", "stage_memory", "stage_step", "templates", "tensors", "timeline", "trace"]
