"""``vectorization: async`` under stop signals: a parent that stops listening leaves its workers no traceback, and a
Ctrl-C that stops a close leaves the workers to the interpreter's exit, which kills them.

A SIGTERM sent to the process group before the run took SIGTERM (while the trainer was made) or after it gave it back
(while the envs closed) killed canter at once; its workers, which ignore SIGTERM, then read the end of their pipe
(``EOFError``) and failed to report it (``BrokenPipeError``): two tracebacks from each worker on the terminal.
"""
from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np
import pytest

from canter.envs import make_vec_env, workers
from support import run_python

ENV = "broken_env:BrokenCartPole-v0"  # tests/broken_env.py
HERE = Path(__file__).resolve().parent


def test_workers_whose_parent_stops_listening_end_without_a_traceback(capfd):
    env = make_vec_env(ENV, 2, "async", {"fail": "none"})
    env.reset(seed=0)
    processes = env.env.unwrapped.processes
    capfd.readouterr()
    for pipe in env.env.unwrapped.parent_pipes:  # as the parent's death closes them
        pipe.close()
    for p in processes:
        p.join(timeout=10)
    err = capfd.readouterr().err
    codes = [p.exitcode for p in processes]
    env.close()
    assert "Traceback" not in err, err
    assert codes == [0, 0]


def test_a_step_whose_answer_the_parent_no_longer_reads_ends_the_worker_quietly(capfd):
    """The parent's end closed while the workers step: the answer cannot be sent, nor the failure to send it."""
    env = make_vec_env(ENV, 2, "async", {"fail": "slow"})  # each step sleeps 0.05 s
    env.reset(seed=0)
    vec = env.env.unwrapped
    vec.step_async(np.zeros(2, dtype=np.int64))
    capfd.readouterr()
    for pipe in vec.parent_pipes:
        pipe.close()
    for p in vec.processes:
        p.join(timeout=10)
    err = capfd.readouterr().err
    codes = [p.exitcode for p in vec.processes]
    env.broken = True  # a call left unanswered, as after a Ctrl-C
    env.close()
    assert "Traceback" not in err, err
    assert codes == [0, 0]


@pytest.mark.slow  # ~2.5 s: a fresh interpreter
def test_sigterm_to_canter_while_its_async_env_is_open_leaves_no_worker_traceback():
    """The default SIGTERM (canter's Run takes it only while it trains): the process ends at once, the workers after it."""
    proc = run_python(
        f"import os, signal, sys\nsys.path.insert(0, {str(HERE)!r})\n"
        "from canter.envs import make_vec_env\n"
        f"env = make_vec_env({ENV!r}, 2, 'async', {{'fail': 'none'}})\nenv.reset(seed=0)\n"
        "print(*(p.pid for p in env.env.unwrapped.processes), flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert proc.returncode == -15, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_a_close_that_a_ctrl_c_stops_leaves_the_workers_to_the_exit_which_kills_them(monkeypatch):
    """A Ctrl-C while the copies closed took the env off the list of those the interpreter's exit closes: the workers,
    which ignore SIGTERM, outlived it, and multiprocessing's exit hook waited for them forever (the process hung)."""
    env = make_vec_env(ENV, 2, "async", {"fail": "none"})
    env.reset(seed=0)
    processes = env.env.unwrapped.processes
    try:
        def ctrl_c(*args, **kwargs):  # while the parent waits for the copies' answers to close
            raise KeyboardInterrupt

        monkeypatch.setattr(env.env, "_close_copies", ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            env.close()
        workers._close_open_envs()  # the interpreter's exit (atexit), before multiprocessing's hook
        for p in processes:
            p.join(timeout=5)
        assert not any(p.is_alive() for p in processes)
    finally:
        for p in processes:  # else this test process could not exit
            if p.is_alive():
                p.kill()


def test_a_ctrl_c_while_the_exit_closes_the_envs_kills_their_workers_quietly(monkeypatch):
    """A Ctrl-C while the interpreter's exit closed an async env left open (a copy's close() can take seconds) stopped
    the exit's close with a traceback ('Exception ignored in atexit callback'), that env's workers and those of the envs
    after it alive, and multiprocessing's exit hook waited for them forever."""
    envs = [make_vec_env(ENV, 2, "async", {"fail": "none"}) for _ in range(2)]
    processes = [p for env in envs for p in env.env.unwrapped.processes]
    try:
        for env in envs:
            env.reset(seed=0)

            def ctrl_c(*args, **kwargs):  # while the parent waits for the copies' answers to close
                raise KeyboardInterrupt

            monkeypatch.setattr(env.env, "_close_copies", ctrl_c)
        try:
            workers._close_open_envs()  # the interpreter's exit (atexit)
        except KeyboardInterrupt:
            pytest.fail("the Ctrl-C escaped the exit's close of the async envs")
        for p in processes:
            p.join(timeout=5)
        assert not any(p.is_alive() for p in processes)
        assert not any(env in workers._OPEN for env in envs)
    finally:
        for p in processes:  # else this test process could not exit
            if p.is_alive():
                p.kill()


def test_a_ctrl_c_while_the_workers_start_kills_them(monkeypatch):
    """A Ctrl-C while the workers made their envs left them to gymnasium's __del__, whose SIGTERM they ignore and whose
    join waited until their envs were made (a second Ctrl-C there was a traceback): here 3 s."""
    import gymnasium as gym

    started = []

    def ctrl_c(self):  # as a Ctrl-C while the parent waits for the workers' answer on the spaces
        started.extend(self.processes)
        raise KeyboardInterrupt

    monkeypatch.setattr(gym.vector.AsyncVectorEnv, "_check_spaces", ctrl_c)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        make_vec_env(ENV, 2, "async", {"fail": "slow_make"})  # each worker's constructor sleeps 3 s
    gc.collect()  # gymnasium's __del__ of the env left half made
    try:
        assert len(started) == 2
        for p in started:
            p.join(timeout=1)
        assert not any(p.is_alive() for p in started)
        assert time.monotonic() - start < 2  # not waiting 3 s for the workers' envs
    finally:
        for p in started:
            if p.is_alive():
                p.kill()
