"""A SIGTERM while a new run sets up (its loggers starting: a W&B init takes seconds) is a Ctrl-C: the run
directory it made is removed. The process died of it, leaving config.yaml, the lock and wandb/, a directory a new run
into it and its resume refused."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import default_sigterm  # noqa: E402,F401  (autouse: SIGTERM at its default action per test)

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import canter

    class TermAtStart:  # a logger whose start() meets a SIGTERM, as a W&B init that a job scheduler stops
        def start(self, run):
            os.kill(os.getpid(), signal.SIGTERM)
        def log(self, record):
            pass
        def close(self):
            pass

    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=sys.argv[1], max_steps=128, n_envs=2, n_steps=64,
                              batch_size=64, n_epochs=1, eval_episodes=0, tensorboard=False)
    run.loggers.append(TermAtStart())
    try:
        for _ in run():
            pass
    except KeyboardInterrupt:
        print("interrupted")
""")


@pytest.mark.slow  # a subprocess (before the fix the SIGTERM ended the process, pytest too if run in it)
@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
def test_a_sigterm_while_the_loggers_start_removes_the_new_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(run_dir)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "interrupted"
    assert not run_dir.exists()  # as after a Ctrl-C there: the same run_dir can be trained into again


def test_sigterm_is_given_back_after_the_setup(tmp_path: Path, tiny_ppo: dict) -> None:
    """Once the run has started, the run's stop handler takes SIGTERM, and after it the default action is back."""
    import canter

    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", **{**tiny_ppo, "max_steps": 128},
                              tensorboard=False)
    seen = [signal.getsignal(signal.SIGTERM) for _ in run()]
    run.trainer.close()
    assert seen and all(getattr(h, "__self__", None) is run for h in seen)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


class _TermAtStart:
    """A logger whose start() meets a SIGTERM (sent only where SIGTERM no longer has its default action, which
    would end the test process: there start() says so instead)."""

    def start(self, run) -> None:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            raise AssertionError("SIGTERM keeps its default action while the loggers start: the process would die")
        os.kill(os.getpid(), signal.SIGTERM)

    def log(self, record) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_sigterm_while_the_loggers_start_is_a_ctrl_c(tmp_path: Path, tiny_ppo: dict) -> None:
    """In process: the SIGTERM raises KeyboardInterrupt, the new run's directory goes, and SIGTERM's default is back."""
    from support import interrupted_tiny_ppo

    run_dir = tmp_path / "run"
    interrupted_tiny_ppo(run_dir, tiny_ppo, _TermAtStart())
    assert not run_dir.exists()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
