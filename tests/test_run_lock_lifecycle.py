"""Runs holding the run directory's lock (moved from test_run_lifecycle.py): another process writing the run is
refused and a dead one's lock taken over, another host's lock is not, and a run that fails before training or
whose logger fails to close gives its lock back. (The lock itself: test_run_lock.py.)"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import canter
from canter.cli import main
from canter.run_lock import LOCK_NAME
from test_run_lifecycle import PPO, _left_early, _summary  # the run's helpers, shared


def test_another_process_writing_the_run_is_refused_and_a_dead_ones_lock_taken_over(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run, gen, _ = _left_early(run_dir)
    run.close()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (run_dir / LOCK_NAME).write_text(json.dumps({"pid": holder.pid, "token": "theirs"}))
        before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
        assert main(["train", "--resume", str(run_dir), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"being written by process {holder.pid}" in err
        assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()} == before
    finally:
        holder.kill()
        holder.wait()
    canter.resume(run_dir)  # its process is gone: a stale lock (a kill -9) does not block the resume
    assert _summary(run_dir)["stop_reason"] == "max_steps" and not (run_dir / LOCK_NAME).exists()


def test_a_lock_written_on_another_host_is_not_taken_over(tmp_path, capsys):
    """A run directory on a shared filesystem: a pid from another host says nothing about this one's
    processes (the pid-only lock was taken over whenever no local process had that pid)."""
    import socket

    run_dir = tmp_path / "run"
    run, _, _ = _left_early(run_dir)
    run.close()
    lock = run_dir / LOCK_NAME
    lock.write_text(json.dumps({"host": socket.gethostname() + "-other", "pid": 2 ** 22 + 1, "token": "theirs"}))
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
    assert main(["train", "--resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"on host '{socket.gethostname()}-other'" in err and LOCK_NAME in err
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()} == before
    lock.unlink()  # as the message says, once nothing trains there
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps" and not lock.exists()


def test_a_run_that_fails_before_training_gives_its_lock_back(tmp_path, monkeypatch):
    """A logger's start() raising (or a Ctrl-C while it runs) after the lock was taken: a later
    resume in this process is not refused as 'still open'."""
    from canter.logging.history import HistoryLogger

    run_dir = tmp_path / "run"
    run, gen, _ = _left_early(run_dir, at=256, max_steps=1024)
    run.close()

    def interrupted(self, run):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(HistoryLogger, "start", interrupted)
        again = canter.api.resume_trainer(run_dir)
        with pytest.raises(KeyboardInterrupt):
            for _ in again():
                pass
        again.close()
    assert not (run_dir / LOCK_NAME).exists()
    canter.resume(run_dir)
    assert _summary(run_dir)["stop_reason"] == "max_steps"
    # a new run failing there leaves no half-written directory (no config.yaml without a run)
    with monkeypatch.context() as m:
        m.setattr(HistoryLogger, "start", interrupted)
        fresh = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "new", max_steps=512, **PPO)
        with pytest.raises(KeyboardInterrupt):
            for _ in fresh():
                pass
        fresh.close()
    assert not (tmp_path / "new").exists()


def test_a_logger_failing_to_close_does_not_keep_the_runs_lock(tmp_path, monkeypatch):
    """A full disk when a logger closes (TensorBoard's last flush): the other loggers are closed and the
    lock given back all the same; it used to stay held, so a resume in this process was refused as 'still open'.
    (The error is a warning now, tests/test_logger_close_errors.py: it replaced the run's outcome.)"""
    from canter.errors import CanterWarning
    from canter.logging.history import HistoryLogger
    from canter.run_lock import check_free

    run_dir = tmp_path / "run"
    real = HistoryLogger.close

    def full(self):
        real(self)
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(HistoryLogger, "close", full)
        with pytest.warns(CanterWarning, match="HistoryLogger could not close: OSError"):
            canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=128, **PPO)
    assert not (run_dir / LOCK_NAME).exists()
    check_free(run_dir)
