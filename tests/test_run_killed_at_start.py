"""A run killed as it started, between taking its directory's lock and writing its config.yaml, leaves only hidden
files there (the lock of a process that is gone, the temp files of the lock and config.yaml): nothing of a run."""
from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from support import assert_one_line_error, run_cli

LEFTOVERS = (".canter.lock", ".canter.lock.0123abcd4567ef89.tmp", "..canter.lock.k2x_9q.tmp", ".config.yaml.ab12_z.tmp")


def _killed_as_it_started(run_dir: Path, pid: int) -> None:
    run_dir.mkdir()
    for name in LEFTOVERS:
        (run_dir / name).write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "token": "t"}))


def _dead_pid() -> int:
    dead = subprocess.Popen(["true"])
    dead.wait()
    return dead.pid


def test_a_new_run_trains_into_the_directory_of_a_run_killed_as_it_started(tmp_path, capsys):
    """It was refused as 'already exists and is not empty' though ``ls`` showed it empty, and its resume said only
    'has no checkpoints/last to resume from'."""
    run_dir = tmp_path / "run"
    _killed_as_it_started(run_dir, _dead_pid())
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--quiet")
    assert_one_line_error(code, err, "killed as it started", "train a new run into")
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(LEFTOVERS)  # nothing deleted by the refusal
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run_dir), "--max-steps",
                           "64", "--n-envs", "2", "--n-steps", "32", "--eval-episodes", "1", "--quiet")
    assert code == 0, err
    names = {p.name for p in run_dir.iterdir()}
    assert "config.yaml" in names and not any(n.endswith(".tmp") or n == ".canter.lock" for n in names)


def test_leftovers_of_a_live_start_or_beside_other_files_are_not_taken_for_a_killed_start(tmp_path, capsys):
    run_dir = tmp_path / "run"
    _killed_as_it_started(run_dir, os.getppid())  # its process lives: a run still starting
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--run-dir", str(run_dir), "--quiet")
    assert_one_line_error(code, err, "not empty")
    other = tmp_path / "other"
    _killed_as_it_started(other, _dead_pid())
    (other / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--run-dir", str(other), "--quiet")
    assert_one_line_error(code, err, "not empty")
    assert (other / "notes.txt").read_text() == "mine"
