"""``vectorization: async``: an env that fails in a worker process is one line naming it, and the workers end.

Gymnasium's ``AsyncVectorEnv`` printed the worker's traceback as ``gymnasium.logger`` ERROR warnings and then
raised the error again with a traceback of gymnasium's frames (exit 1); a worker that died left an ``EOFError``
that every later close raised again; a terminal's Ctrl-C killed the workers while the run finished its iteration.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from canter.envs import make_vec_env
from canter.envs.workers import AsyncEnvError
from support import assert_one_line_error, run_python

ENV = "broken_env:BrokenCartPole-v0"  # tests/broken_env.py: fails only in a worker process
HERE = Path(__file__).resolve().parent


def _processes(env):
    """The worker processes of a VecEnv made with vectorization 'async'."""
    return env.env.unwrapped.processes


def _fail(fail: str, action=None):
    """Make two async copies that fail as ``fail`` says, reset and step them; returns (error, processes)."""
    env = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(AsyncEnvError) as info:
            env = make_vec_env(ENV, 2, "async", {"fail": fail})
            if action is not None:
                action(env)
            env.reset(seed=0)
            env.step(np.zeros(2, dtype=np.int64))
        processes = _processes(env) if env is not None else []
        if env is not None:
            env.close()
    assert not [str(w.message) for w in caught if "ERROR" in str(w.message) or "WARN" in str(w.message)]
    assert not any(p.is_alive() for p in processes)
    return str(info.value), processes


@pytest.mark.parametrize("fail, needle", [
    ("step", "step() raised ValueError: pole length must be positive, got -1"),
    ("reset", "reset() raised KeyError: 'level_3'"),
    ("make", "its constructor raised OSError: no simulator licence in this process"),
])
def test_an_error_in_a_worker_is_one_line_naming_the_env_the_error_and_its_place(fail, needle):
    message, _ = _fail(fail)
    assert message.startswith(f"env '{ENV}' failed in an async worker: ")
    assert needle in message and "broken_env.py, line " in message and "\n" not in message
    assert gym.logger.min_level == gym.logger.WARN  # given back


def test_a_worker_that_exits_is_named_with_its_exit_code():
    message, _ = _fail("exit")  # both copies exit: either may be seen first
    assert re.fullmatch(rf"env '{ENV}': async worker [01] died \(exit code 3\) during step\(\)", message), message


def test_a_killed_worker_is_named_and_the_live_one_is_terminated_on_close():
    def kill_first(env):
        env.reset(seed=0)
        _processes(env)[0].kill()

    start = time.monotonic()
    message, processes = _fail("none", kill_first)
    assert message == f"env '{ENV}': async worker 0 died (killed by SIGKILL) during reset()"
    assert processes[0].exitcode == -signal.SIGKILL
    assert time.monotonic() - start < 5


def test_a_worker_killed_between_calls_does_not_stop_close():
    env = make_vec_env(ENV, 2, "async", {"fail": "none"})
    env.reset(seed=0)
    processes = _processes(env)
    processes[1].kill()
    processes[1].join()
    env.close()
    assert not any(p.is_alive() for p in processes)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_workers_ignore_ctrl_c_and_sigterm_so_the_parent_decides_when_they_stop(sig):
    """A terminal's Ctrl-C reaches the whole process group, as does a SIGTERM sent to it (``timeout``, a job
    scheduler); the run finishes its iteration, so the workers must live. They died of SIGTERM."""
    env = make_vec_env(ENV, 2, "async", {"fail": "none"})
    try:
        env.reset(seed=0)
        for p in _processes(env):
            os.kill(p.pid, sig)
        time.sleep(0.1)
        assert env.step(np.zeros(2, dtype=np.int64)).obs.shape == (2, 4)
    finally:
        env.close()


@pytest.mark.slow  # ~2.2 s: a fresh interpreter
def test_an_async_env_left_open_does_not_hold_up_the_interpreters_exit():
    """The workers ignore SIGTERM, with which multiprocessing's exit hook stops them before it waits for them:
    canter closes the async envs still open first."""
    proc = run_python("import numpy as np\nfrom canter.envs import make_vec_env\n"
                      "env = make_vec_env('CartPole-v1', 2, 'async')\nenv.reset(seed=0)\nprint('made')\n")
    assert proc.returncode == 0 and proc.stdout == "made\n", proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def _canter(*argv: str, cwd: Path, **popen) -> subprocess.Popen:
    path = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, PYTHONWARNINGS="default")  # gymnasium's warnings would show
    return subprocess.Popen([sys.executable, "-m", "canter", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


@pytest.mark.slow  # ~2.5 s: the in-process tests above check the same translation
@pytest.mark.parametrize("fail", ["step", "exit"])
def test_cli_async_env_failure_is_one_line_exit_2(tmp_path, fail):
    start = time.monotonic()
    proc = _canter("train", "ppo", "--env", ENV, "--env-kwargs", f"{{fail: {fail}}}", "--vectorization", "async",
                   "--set", "n_envs=2", "--set", "n_steps=64", "--max-steps", "256", "--quiet", "--run-dir", "run",
                   cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert_one_line_error(proc.returncode, err, f"env '{ENV}'", "ValueError" if fail == "step" else "exit code 3")
    assert "ERROR" not in err and "WARN" not in err
    assert time.monotonic() - start < 15


def _wait_until_training(proc: subprocess.Popen, run_dir: Path) -> None:
    """Wait until the run's first iteration is under way: ``last`` is saved when training starts, after the run took
    SIGINT and SIGTERM (each step then sleeps 0.05 s: 64 steps of 2 copies take 3.2 s). A fixed 6 s sleep was too short
    on a loaded machine: the signals came while canter imported or made the trainer ('interrupted' alone, or -15)."""
    deadline = time.monotonic() + 90
    while not (run_dir / "checkpoints" / "last.safetensors").exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the run did not start training"
        time.sleep(0.05)
    time.sleep(0.5)


@pytest.mark.slow  # ~8 s: a run that is under way
def test_cli_second_ctrl_c_of_the_group_during_an_async_run_exits_130_and_ends_the_workers(tmp_path):
    """As a terminal sends it: SIGINT to every process of the group. Before, the workers died of the first one,
    and closing the env raised BrokenPipeError, which the CLI took for a closed stdout: exit 0."""
    proc = _canter("train", "ppo", "--env", ENV, "--env-kwargs", "{fail: slow}", "--vectorization", "async",
                   "--set", "n_envs=2", "--set", "n_steps=64", "--max-steps", "100000", "--run-dir", "run",
                   cwd=tmp_path, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_until_training(proc, tmp_path / "run")
    for _ in range(2):
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.3)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "ERROR" not in err and "WARN" not in err, err
    assert err.splitlines()[-1].startswith("interrupted; continue with: canter train --resume"), err
    deadline = time.monotonic() + 5
    while subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).returncode == 0:  # workers left
        assert time.monotonic() < deadline, "worker processes outlived the run"
        time.sleep(0.1)


@pytest.mark.slow  # ~8 s: a run that is under way
def test_cli_sigterm_to_the_group_during_an_async_run_saves_last_and_exits_130(tmp_path):
    """``timeout`` or a job scheduler sends SIGTERM to every process of the group. The workers died of it while the
    run finished its iteration: exit 2 with 'async worker 0 died (killed by SIGTERM)'. Now as one SIGTERM to canter."""
    proc = _canter("train", "ppo", "--env", ENV, "--env-kwargs", "{fail: slow}", "--vectorization", "async",
                   "--set", "n_envs=2", "--set", "n_steps=64", "--max-steps", "100000", "--run-dir", "run",
                   "--quiet", cwd=tmp_path, start_new_session=True)
    _wait_until_training(proc, tmp_path / "run")
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "died" not in err, err
    assert err.splitlines()[-1].startswith("interrupted at step "), err
    assert (tmp_path / "run" / "checkpoints" / "last.safetensors").exists()
    assert subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).returncode != 0  # no worker left
