"""An ``on_checkpoint`` hook raising at the run's final ``last`` (after it was written): the summary said
``stop_reason: interrupted`` (resumable, as for a ``last`` that could not be saved) beside a ``last`` that says the
run finished, which ``--resume`` then refused as finished ('already finished (stop reason: max_steps)')."""
from __future__ import annotations

import json

import pytest

import canter


def test_the_summary_says_what_last_says(tmp_path):
    def fail_at_the_end(trainer, path):
        if trainer.step >= 32 and str(path).endswith("last"):
            raise RuntimeError("hook failed")

    run = tmp_path / "run"
    with pytest.raises(RuntimeError, match="hook failed"):
        canter.train("a2c", "CartPole-v1", run_dir=run, max_steps=32, n_envs=1, n_steps=8, eval_episodes=0,
                     tensorboard=False, hooks={"on_checkpoint": fail_at_the_end})
    last = json.loads((run / "checkpoints" / "last.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    assert last["stop_reason"] == "max_steps"
    assert (summary["stop_reason"], summary["steps"], summary["error"]) == ("max_steps", 32, "RuntimeError: hook failed")


def test_a_save_resumable_after_the_hooks_error_keeps_the_finished_reason(tmp_path):
    """Run.stop_reason stayed None after the hook raised, so a run.save_resumable() after the loop (which keeps the
    run's stop reason, as docs/training-control.md says) wrote a 'last' of a run going on beside a summary saying
    max_steps, and --resume trained past the budget."""
    failed = []

    def fail_once_at_the_end(trainer, path):
        if trainer.step >= 32 and str(path).endswith("last") and not failed:
            failed.append(path)
            raise RuntimeError("hook failed")

    run = canter.make_trainer("a2c", "CartPole-v1", run_dir=tmp_path / "run", max_steps=32, n_envs=1, n_steps=8,
                              eval_episodes=0, tensorboard=False, hooks={"on_checkpoint": fail_once_at_the_end})
    with pytest.raises(RuntimeError, match="hook failed"):
        for _ in run():
            pass
    assert run.stop_reason == "max_steps"
    run.save_resumable()
    assert json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())["stop_reason"] == "max_steps"
