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
