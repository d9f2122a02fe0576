"""canter tune with a trial whose evaluation returns NaN (an env whose rewards turn NaN only in the evaluation
episodes, which run longer than training's): the median rule pruned it, so it counted as a finished trial of
--trials with no value, or (before pruning starts) Optuna failed it with 'The value nan is not acceptable'."""
import dataclasses
import logging

import pytest

from canter.cli import main

optuna = pytest.importorskip("optuna")


def _nan_evaluations(monkeypatch, trial_numbers):
    """Make the evaluations of the trials numbered in ``trial_numbers`` return NaN (counted in call order)."""
    import canter.api

    real, calls = canter.api.make_trainer, []

    def make_trainer(*args, **kwargs):
        trainer, number = real(*args, **kwargs), len(calls)
        calls.append(number)
        if number not in trial_numbers:
            return trainer
        run = trainer.__call__

        def records():
            for record in run():
                if record.evaluation is not None:
                    nan = dataclasses.replace(record.evaluation, mean_return=float("nan"))
                    record = dataclasses.replace(record, evaluation=nan)
                yield record
        return _Calls(trainer, records)

    monkeypatch.setattr(canter.api, "make_trainer", make_trainer)


class _Calls:
    """A trainer whose call is ``records`` (the objective calls ``trainer()``), the rest the trainer's."""

    def __init__(self, trainer, records):
        self._trainer, self._records = trainer, records

    def __call__(self):
        return self._records()

    def __getattr__(self, name):
        return getattr(self._trainer, name)


@pytest.mark.slow
def test_tune_fails_a_trial_whose_evaluation_is_nan_instead_of_pruning_it(tmp_path, monkeypatch):
    """Trial 1's evaluations return NaN: it is failed, with canter's line, and a third trial runs."""
    _nan_evaluations(monkeypatch, {1})
    monkeypatch.setattr("canter.tools.tune.save_plots", lambda *args: {})
    space = tmp_path / "space.yaml"  # rollouts of 16 steps: an evaluation every 16, the median rule from the second
    space.write_text("n_steps: null\nbatch_size: null\nn_epochs: null\n")
    out, lines = tmp_path / "t", []
    handler = logging.Handler()
    handler.emit = lines.append  # Optuna's own handler writes to the stderr it found at import, which capsys misses
    optuna.logging.get_logger("optuna").addHandler(handler)
    try:
        code = main(["tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "2", "--max-steps", "64",
                     "--eval-every", "16", "--n-envs", "2", "--eval-episodes", "1", "--prune-startup", "1",
                     "--prune-warmup", "0", "--space", str(space), "--set", "n_steps=8", "--set", "batch_size=16",
                     "--set", "n_epochs=1", "--quiet"])
    finally:
        optuna.logging.get_logger("optuna").removeHandler(handler)
    assert code == 0
    trials = optuna.load_study(study_name="ppo-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}").trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"]  # the NaN trial does not count
    assert not trials[1].intermediate_values  # nothing reported to the pruner
    failed = [r for r in lines if "Trial 1 failed with parameters" in r.getMessage()]
    assert failed and "mean return of nan" in failed[0].getMessage() and not failed[0].exc_info  # one line
