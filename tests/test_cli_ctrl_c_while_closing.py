"""``canter train``: a Ctrl-C while the envs close, after the run was saved, still reports the run and exits 130.

``_drive`` closed the run's envs in a ``finally``; a Ctrl-C there (closing async workers can take a while: a second
Ctrl-C after the one that stopped the run) escaped it, and the CLI printed a bare 'interrupted' in place of the
step the run was saved at and the command that resumes it.
"""
from __future__ import annotations

import json
import os
import signal

from canter.cli import main
from canter.run import Run
from canter.trainers.base import Trainer

ARGS = ["train", "ppo", "--env", "CartPole-v1", "--set", "n_envs=2", "--set", "n_steps=64", "--set", "eval_episodes=0",
        "--quiet"]


def _ctrl_c_in_close(monkeypatch):
    """Make the first close of the trainer's envs end in a Ctrl-C."""
    original = Trainer.close
    calls = []

    def close(self):
        calls.append(self)
        if len(calls) == 1:
            raise KeyboardInterrupt
        original(self)

    monkeypatch.setattr(Trainer, "close", close)
    return calls


def test_a_ctrl_c_while_a_stopped_run_closes_still_says_how_to_resume(tmp_path, monkeypatch, capsys):
    save = Run.save_resumable

    def first_ctrl_c(self, *args, **kwargs):  # as the first Ctrl-C of a terminal once training has started
        path = save(self, *args, **kwargs)
        if not getattr(self, "_test_signalled", False):
            self._test_signalled = True
            os.kill(os.getpid(), signal.SIGINT)
        return path

    monkeypatch.setattr(Run, "save_resumable", first_ctrl_c)
    calls = _ctrl_c_in_close(monkeypatch)
    run = tmp_path / "run"
    code = main([*ARGS, "--max-steps", "100000", "--run-dir", str(run)])
    err = capsys.readouterr().err
    assert code == 130, err
    assert err.splitlines()[-1] == f"interrupted at step 128; run saved, continue with: canter train --resume {run}"
    assert json.loads((run / "summary.json").read_text())["stop_reason"] == "interrupted"
    assert (run / "checkpoints" / "last.safetensors").is_file()
    calls[0].close()  # the envs left open


def test_a_ctrl_c_while_a_finished_run_closes_reports_it_and_exits_130(tmp_path, monkeypatch, capsys):
    calls = _ctrl_c_in_close(monkeypatch)
    run = tmp_path / "run"
    code = main([*ARGS, "--max-steps", "128", "--run-dir", str(run)])
    out, err = capsys.readouterr()
    assert code == 130, err
    assert out.startswith("finished (max_steps): ") and "interrupted" not in err, (out, err)
    assert json.loads((run / "summary.json").read_text())["stop_reason"] == "max_steps"
    calls[0].close()
