"""experiments.step_time: one arrangement's training step, as tpsim predict simulates it."""

from experiments.published import tpsim_json
from experiments.step_time import Step, training_step


def test_training_step_is_the_simulated_row_of_its_predict_command():
    step = Step("megatron-1.2b", "1d", 2, dp=2, micro_batch=2, global_batch=8, topology="dgx-a100")
    rows = tpsim_json(step.command().split()[1:])
    simulated = [row for row in rows if row.get("model") == "simulated"]
    assert len(simulated) == 1
    assert training_step(step).step_s == simulated[0]["step_time_s"]
    assert step.label == "megatron tp=2 x dp=2" and step.gpus == 4


def test_a_grid_arrangement_names_its_grid_and_gpus():
    step = Step("megatron-1.2b", "summa25d", (2, 2, 2), dp=1, micro_batch=8, global_batch=8, topology="dgx-a100")
    assert step.tp == 8 and step.gpus == 8
    assert "--tp-sizes 8 --algos summa25d" in step.command()
    assert training_step(step).step_s > 0
