"""An env whose close() raises: a one-line warning naming the env, and every copy closed.

It was a traceback at the end of a finished run (after its files were written), which left the evaluation env's
copies open; a sync vector env closed no copy after the one that raised; with async copies the run could not start
(gymnasium closes the parent's copy it reads the spaces from) and each worker's close printed its traceback.
"""
from __future__ import annotations

import numpy as np
import pytest

import odd_api_env
from canter.envs import make_vec_env
from support import closing_warnings, run_python


def test_sync_close_that_raises_warns_and_closes_every_copy():
    env = make_vec_env("odd_api_env:CloseRaises-v0", 3, "sync")
    env.reset(seed=0)
    env.step(np.array([0, 1, 0]))
    before = odd_api_env.CLOSED[0]
    said = closing_warnings(env)
    assert odd_api_env.CLOSED[0] - before == 3  # every copy was asked, not only the first
    assert len(said) == 1 and "odd_api_env:CloseRaises-v0" in said[0] and "licence server" in said[0], said


def test_async_close_that_raises_neither_stops_the_start_nor_the_end():
    env = make_vec_env("odd_api_env:CloseRaises-v0", 2, "async")
    processes = env.env.unwrapped.processes
    env.reset(seed=0)
    env.step(np.array([0, 1]))
    env.close()
    for p in processes:
        p.join(5)
    assert [p.exitcode for p in processes] == [0, 0]  # the workers' close raised: exit code 1 and a traceback


@pytest.mark.slow  # a training run in a fresh process (~5 s)
def test_a_run_whose_env_close_raises_finishes_with_a_warning(tmp_path):
    code = ("import sys; sys.argv = ['canter', 'train', 'ppo', '--env', 'odd_api_env:CloseRaises-v0', '--max-steps', "
            "'64', '--n-envs', '2', '--set', 'n_steps=32', '--set', 'batch_size=32', '--eval-episodes', '1', "
            f"'--run-dir', {str(tmp_path / 'run')!r}, '--quiet']; from canter.cli import entry; entry()")
    tests = str(__import__("pathlib").Path(__file__).resolve().parent)
    done = run_python(f"import sys; sys.path.insert(0, {tests!r}); {code}")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "canter: warning: env 'odd_api_env:CloseRaises-v0': close() raised RuntimeError" in done.stderr, done.stderr
    assert "finished" in done.stdout, done.stdout


@pytest.mark.slow  # a training run in a fresh process (~5 s)
def test_async_workers_warnings_name_the_env(tmp_path):
    code = ("import sys; sys.argv = ['canter', 'train', 'ppo', '--env', 'odd_api_env:CloseRaises-v0', '--max-steps', "
            "'64', '--n-envs', '2', '--set', 'n_steps=32', '--set', 'batch_size=32', '--eval-episodes', '1', "
            f"'--vectorization', 'async', '--run-dir', {str(tmp_path / 'run')!r}, '--quiet']; "
            "from canter.cli import entry; entry()")
    tests = str(__import__("pathlib").Path(__file__).resolve().parent)
    done = run_python(f"import sys; sys.path.insert(0, {tests!r}); {code}")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "close() raised" in line]
    assert said and all(line.startswith("canter: warning: env 'odd_api_env:CloseRaises-v0' (an async worker's copy): "
                                        "close() raised RuntimeError") for line in said), done.stderr
