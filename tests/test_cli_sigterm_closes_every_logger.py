"""canter train: a SIGTERM while one logger closes (a W&B finish takes seconds) is a Ctrl-C there (7df5f17), and the
loggers after it are still closed: the KeyboardInterrupt left Run._finish's loop over the loggers (it caught only
Exception), so the console's progress display (the last logger) was never stopped."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import canter
from canter.cli import _drive
from support import StubLogger, default_sigterm  # noqa: E402,F401  (autouse: SIGTERM at its default action per test)


_Logger = StubLogger  # term=True: its close meets a SIGTERM


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_in_one_loggers_close_still_closes_the_loggers_after_it(tmp_path: Path, tiny_ppo: dict,
                                                                         capsys: pytest.CaptureFixture) -> None:
    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 128, "eval_episodes": 0},
                              tensorboard=False)
    interrupted, after = _Logger(term=True), _Logger()
    run.loggers += [interrupted, after]
    assert _drive(run) == 130
    assert interrupted.closed and after.closed, "the logger after the interrupted one was left open"
    assert "finished (max_steps)" in capsys.readouterr().out
    assert not (run_dir / ".canter.lock").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_an_interrupted_run_closes_gives_its_step_and_resume_line(tmp_path: Path, tiny_ppo: dict,
                                                                                  capsys: pytest.CaptureFixture) -> None:
    """A first Ctrl-C saved the run after its first rollout (step 128); a SIGTERM (or a second Ctrl-C) while its loggers close said only
    'interrupted; continue with: ...', not the usual 'interrupted at step 128; run saved, ...' that the stop table
    of training-control.md promises there."""
    def stop(trainer, losses):
        if trainer.step >= 64 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"  # as a first Ctrl-C does

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 1000, "eval_episodes": 0},
                              tensorboard=False, hooks={"after_update": stop})
    run.loggers.append(_Logger(term=True))
    assert _drive(run) == 130
    err = capsys.readouterr().err
    assert f"interrupted at step 128; run saved, continue with: canter train --resume {run_dir}" in err, err


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_closing_after_a_second_ctrl_c_keeps_the_line_without_a_step(tmp_path: Path, tiny_ppo: dict,
                                                                                      capsys: pytest.CaptureFixture):
    """A second Ctrl-C inside an iteration keeps the previous 'last' (step 256 here), so the line names no step; a
    SIGTERM while the loggers closed then said 'interrupted at step 384; run saved', the step of the last record,
    which no checkpoint holds."""
    def second_ctrl_c(trainer, losses):
        if trainer.step >= 512:
            raise KeyboardInterrupt  # as a second Ctrl-C inside the iteration does

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 1000,
                                                                        "eval_episodes": 0, "n_epochs": 1},
                              checkpoint_every=256, tensorboard=False, hooks={"after_update": second_ctrl_c})
    run.loggers.append(_Logger(term=True))
    assert _drive(run) == 130
    err = capsys.readouterr().err
    assert f"interrupted; continue with: canter train --resume {run_dir}" in err, err
    assert "run saved" not in err, err


def test_a_second_interrupt_while_a_failed_setup_closes_its_loggers_still_removes_the_new_run(tmp_path: Path,
                                                                                                tiny_ppo: dict):
    """A Ctrl-C while a logger starts (a W&B init) cleans up the new run; a second one (or a SIGTERM) while a logger
    started before it closes left the loggers after that one open and the half-made run directory behind (its
    config.yaml, the history files), which a new run into it refuses: the setup's loop caught only Exception, as
    Run._finish's did."""
    class _Interrupting(_Logger):
        def __init__(self, at: str = "") -> None:
            super().__init__()
            self.at = at

        def start(self, run) -> None:
            if self.at == "start":
                raise KeyboardInterrupt

        def close(self) -> None:
            self.closed = True
            if self.at == "close":
                raise KeyboardInterrupt

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "eval_episodes": 0},
                              tensorboard=False)
    closing, after = _Interrupting("close"), _Interrupting()
    run.loggers += [closing, after, _Interrupting("start")]
    with pytest.raises(KeyboardInterrupt):
        for _ in run():
            pass
    assert after.closed, "the logger after the interrupted one was left open"
    assert not run_dir.exists(), sorted(p.name for p in run_dir.iterdir())
