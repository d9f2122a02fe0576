"""A kill as a finished run writes its end: it must leave a run that resumes into that end, or one whose summary
says how it ended; not a finished ``last`` without the summary of its end, which no resume writes."""
from __future__ import annotations

import json

import pytest

import canter
from canter.checkpoint import read_metadata
from canter.run import Run


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after it runs (no ``except Exception`` catches it)."""


def test_a_kill_between_the_final_last_and_the_summary_leaves_a_run_that_resumes_to_its_end(tmp_path, monkeypatch):
    """The final 'last' (stop_reason max_steps) was saved before the summary: killed between the two, the run had no
    summary.json and --resume refused it as already finished, so none was ever written."""
    write = Run._write_summary

    def killed_at_the_end(self, stop_reason, counters=None):
        if stop_reason == "max_steps":
            raise Killed
        return write(self, stop_reason, counters)

    monkeypatch.setattr(Run, "_write_summary", killed_at_the_end)
    run_dir = tmp_path / "run"
    with pytest.raises(Killed):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, n_envs=2, n_steps=32, batch_size=64,
                     n_epochs=1, eval_every=0, eval_episodes=1, tensorboard=False, quiet=True)
    assert read_metadata(run_dir / "checkpoints" / "last")["stop_reason"] in (None, "interrupted")
    monkeypatch.setattr(Run, "_write_summary", write)
    canter.resume(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "max_steps" and summary["steps"] == 128
    assert read_metadata(run_dir / "checkpoints" / "last")["stop_reason"] == "max_steps"
