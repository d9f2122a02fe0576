"""A stop signal inside a long iteration: the run waits STOP_GRACE_SECONDS for the iteration to end, then quits
as a second Ctrl-C does, keeping the last checkpoint (canter/stop_grace.py)."""
import json
import os
import signal
import sys
import time

import pytest

import canter
import canter.run
from canter.checkpoint import read_metadata


def test_sigterm_in_a_long_iteration_quits_after_the_grace_keeping_last(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(canter.run, "STOP_GRACE_SECONDS", 0.3, raising=False)
    sent = []

    def sigterm_in_first_iteration(trainer):
        if not sent:
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGTERM)  # handled at once: a stop request for the iteration that begins

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, n_envs=2, n_steps=16, batch_size=32,
                              n_epochs=100_000, max_steps=320, eval_every=0,  # each iteration: minutes
                              hooks={"before_collect": sigterm_in_first_iteration})
    with pytest.raises(KeyboardInterrupt):
        for _ in run():
            pass
    waited = time.perf_counter() - sent[0]
    run.close()
    assert waited < 5.0, f"the run went on for {waited:.1f} s after SIGTERM"
    assert "did not end within 0.3 s" in capsys.readouterr().err
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["step"] == 0 and meta["stop_reason"] is None  # saved at the start: nothing half-done is saved
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "interrupted"
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0 and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL


def _stopped_at_the_second_iteration(run_dir, monkeypatch=None):
    """A PPO run (32 steps an iteration) sent SIGTERM before its second iteration's collection, with stderr made a
    broken pipe first where ``monkeypatch`` is given; the run, not yet driven."""
    def sigterm_once(trainer):
        if trainer.iteration_count == 1:
            if monkeypatch is not None:
                monkeypatch.setattr(sys, "stderr", _BrokenPipe())
            os.kill(os.getpid(), signal.SIGTERM)

    return canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, n_envs=2, n_steps=16, batch_size=32,
                               max_steps=320, eval_every=0, hooks={"before_collect": sigterm_once})


def test_an_iteration_that_ends_within_the_grace_is_saved(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run = _stopped_at_the_second_iteration(run_dir)
    for _ in run():
        pass
    run.close()
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["step"] == 64 and meta["stop_reason"] == "interrupted"  # stopped after the iteration, and saved it
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0 and signal.getsignal(signal.SIGALRM) == signal.SIG_DFL


def test_the_grace_is_three_of_the_runs_longest_iterations_where_that_is_longer():
    from canter.stop_grace import STOP_GRACE_SECONDS, grace_seconds

    assert grace_seconds(0.0) == grace_seconds(1.0) == STOP_GRACE_SECONDS
    assert grace_seconds(10.0) == 30.0


def test_an_iteration_of_the_usual_length_is_saved_after_the_minimum_grace(tmp_path, monkeypatch):
    """With a fixed 5 s grace, a first Ctrl-C in a run whose iterations take longer (Atari PPO on a CPU) dropped
    the iteration under way and everything since the last periodic checkpoint with it."""
    monkeypatch.setattr(canter.run, "STOP_GRACE_SECONDS", 0.05)

    def slow_iterations(trainer):
        if trainer.iteration_count == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # grace: 3 x the first iteration's 0.4 s+, not 0.05 s
        time.sleep(0.4 if trainer.iteration_count == 0 else 0.1)

    run_dir = tmp_path / "run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, n_envs=2, n_steps=16, batch_size=32,
                              max_steps=320, eval_every=0, checkpoint_every=0, hooks={"before_collect": slow_iterations})
    for _ in run():
        pass
    run.close()
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["step"] == 96 and meta["stop_reason"] == "interrupted"  # the signalled iteration ended and was saved


class _BrokenPipe:
    """A stderr whose reader is gone (``canter train ... | tee log`` after a terminal's Ctrl-C killed ``tee``)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_stop_signal_with_stderr_gone_still_saves_last(tmp_path, monkeypatch):
    """The stop handler's notice, printed to a broken pipe, raised BrokenPipeError inside the iteration: the run
    ended with that error, its summary said 'interrupted', yet ``last`` stayed at step 0 and a resume started over
    (found running docs/algorithms/offline.md's td3bc command as ``... | tail``, stopped with ``kill -TERM -PGID``)."""
    run_dir = tmp_path / "run"
    run = _stopped_at_the_second_iteration(run_dir, monkeypatch)
    for _ in run():
        pass
    run.close()
    meta = read_metadata(run_dir / "checkpoints" / "last")
    assert meta["step"] == 64 and meta["stop_reason"] == "interrupted"
    assert json.loads((run_dir / "summary.json").read_text())["error"] is None


def test_canter_train_stopped_with_stderr_gone_exits_130(tmp_path, monkeypatch):
    """``canter train``'s closing 'interrupted at step N' line, printed to a stderr that is gone, raised
    BrokenPipeError out of the command: exit code 1 and a traceback (to nowhere), not 130, for a run that was
    saved."""
    from canter.cli import _drive

    run = _stopped_at_the_second_iteration(tmp_path / "run", monkeypatch)
    assert _drive(run) == 130
    assert read_metadata(tmp_path / "run" / "checkpoints" / "last")["step"] == 64


@pytest.mark.parametrize("first_ends_first", [True, False])
def test_two_interleaved_runs_give_the_callers_stop_handlers_back(tmp_path, first_ends_first):
    """Two make_trainer runs of one process, iterated in turn: when the first ended first, the second gave back
    the first's handler, which stayed installed after both and took the next Ctrl-C ('stopping after this
    iteration' for a run long finished) instead of Python's KeyboardInterrupt."""
    tiny = dict(n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_every=0, eval_episodes=1, tensorboard=False)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    first = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "a", max_steps=256, **tiny)
    second = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "b", max_steps=256, **tiny)
    loops = [first(), second()]
    next(loops[0]), next(loops[1])
    for loop in loops if first_ends_first else loops[::-1]:
        for _ in loop:
            pass
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
