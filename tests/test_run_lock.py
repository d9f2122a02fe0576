"""The run directory's lock (canter/run_lock.py): two processes taking it at once never both get it."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from canter.errors import CanterError
from canter.run_lock import LOCK_NAME


def test_two_writers_starting_at_once_never_both_take_the_lock(tmp_path, monkeypatch):
    """Another process writes its lock between this one's check and its write: this one is refused."""
    import canter.run_lock as rl

    real, came = rl.check_free, []

    def racing(run_dir):
        real(run_dir)
        if not came:  # the other process (this one's parent, alive) takes the lock right after the check
            came.append(True)
            (Path(run_dir) / LOCK_NAME).write_text(json.dumps({"pid": os.getppid(), "token": "theirs"}))

    monkeypatch.setattr(rl, "check_free", racing)
    with pytest.raises(CanterError, match=f"being written by process {os.getppid()}"):
        rl.acquire(tmp_path)
    assert json.loads((tmp_path / LOCK_NAME).read_text())["token"] == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_NAME]


def _take_lock(run_dir: Path, barrier: Any, results: Any) -> None:
    """A process resuming ``run_dir``: take its lock at the barrier, hold it a moment, report whether it got it."""
    from canter.run_lock import acquire

    barrier.wait()
    try:
        acquire(run_dir)
    except CanterError:
        results.put("refused")
        return
    results.put("took")
    import time

    time.sleep(0.3)  # alive while the other one decides


def test_two_processes_taking_over_a_stale_lock_at_once_never_both_take_it(tmp_path):
    """Two resumes of a killed run (its lock names a dead process) starting together: one takes the lock, the
    other is refused. Both judged the lock stale and both wrote theirs over it, so both trained into the run."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for trial in range(3):
        run_dir = tmp_path / f"run{trial}"
        run_dir.mkdir()
        (run_dir / LOCK_NAME).write_text(json.dumps({"host": socket.gethostname(), "pid": 2 ** 22 + 1,
                                                     "token": "dead"}))
        barrier, results = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_take_lock, args=(run_dir, barrier, results)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(10)
        assert sorted(results.get(timeout=5) for _ in procs) == ["refused", "took"]


class _CtrlCAtClose:
    """A logger whose close() meets a Ctrl-C, as a third one pressed while a run quits after its second (the
    default SIGINT handler is back by then): the cleanup stops there."""

    def start(self, run):
        pass

    def log(self, record):
        pass

    def close(self):
        raise KeyboardInterrupt


def test_a_ctrl_c_during_the_cleanup_still_gives_the_lock_back(tmp_path, tiny_ppo):
    """The lock was given back after the loggers' close(): a Ctrl-C there left RUN_DIR/.canter.lock behind, and a
    resume in the same process was refused as 'still open in this process' (another process took it over as stale)."""
    from canter.run_lock import holder
    from support import interrupted_tiny_ppo

    run_dir = tmp_path / "run"
    interrupted_tiny_ppo(run_dir, tiny_ppo, _CtrlCAtClose())
    assert not (run_dir / LOCK_NAME).exists() and holder(run_dir) is None
    assert (run_dir / "checkpoints" / "last.json").exists()
