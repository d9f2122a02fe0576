"""Async env copies whose close() raises: one warning for all the workers (each worker warned on its own, the same
line once per worker), and none where no close() raises."""
from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import odd_api_env  # noqa: F401 - registers odd_api_env:CloseRaises-v0
from canter.envs import make_vec_env, vector
from canter.envs.workers import AsyncEnvError
from canter.registry import register
from support import run_python


def _close_warnings(monkeypatch, tmp_path, env_id: str, n: int) -> list[str]:
    """The close warnings closing ``n`` async copies of ``env_id`` gives, in every process (the forked workers append
    theirs to a file too)."""
    said = tmp_path / "said"
    said.touch()

    def record(env_id, exc, where=""):
        with open(said, "a") as f:  # one write per line: the workers' lines do not mix
            f.write(f"{os.getpid()} {env_id}{where}: {exc}\n".replace("\n", " ").rstrip() + "\n")

    monkeypatch.setattr(vector, "warn_close_error", record)
    env = make_vec_env(env_id, n, "async")
    env.reset(seed=0)
    env.step(np.zeros(n, dtype=int))
    env.close()
    return said.read_text().splitlines()


def test_four_async_workers_whose_close_raises_warn_once(monkeypatch, tmp_path):
    said = _close_warnings(monkeypatch, tmp_path, "odd_api_env:CloseRaises-v0", 4)
    assert len(said) == 1, said
    assert said[0].startswith(f"{os.getpid()} odd_api_env:CloseRaises-v0 (an async worker's copy): RuntimeError: the "
                              f"simulator's licence server is gone"), said  # the parent's


def test_async_workers_whose_close_is_fine_say_nothing(monkeypatch, tmp_path):
    assert _close_warnings(monkeypatch, tmp_path, "CartPole-v1", 3) == []


@pytest.mark.slow  # a fresh process (~6 s here): the workers' stderr as the user sees it
def test_four_async_workers_whose_close_raises_print_one_line():
    tests = str(Path(__file__).resolve().parent)
    done = run_python(
        f"import sys; sys.path.insert(0, {tests!r}); import numpy as np; from canter.envs import make_vec_env; "
        f"env = make_vec_env('odd_api_env:CloseRaises-v0', 4, 'async'); env.reset(seed=0); "
        f"env.step(np.zeros(4, dtype=int)); env.close(); print('closed', flush=True)")
    assert done.returncode == 0 and done.stdout.strip() == "closed" and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "close() raised" in line]
    assert len(said) == 1 and "env 'odd_api_env:CloseRaises-v0' (an async worker's copy): close() raised " \
                              "RuntimeError" in said[0], done.stderr


class _FailsFirst(gym.Env):
    """Copy 0 (reset with seed 0) raises in step(); every copy's close() leaves a file named for its process."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, directory: str = "") -> None:
        self.directory, self.fails = directory, False

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.fails = seed == 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        if self.fails:
            raise RuntimeError("copy 0 broke")
        return np.zeros(3, np.float32), 0.0, False, False, {}

    def close(self):
        (Path(self.directory) / str(os.getpid())).touch()


register("env", "FailsFirstCopy-test")(_FailsFirst)


def test_the_other_copies_close_after_one_copys_step_error(tmp_path):
    """After one worker's step() error (gymnasium drops its pipe) the close asked every copy, that one's missing pipe
    too, failed and killed the others, whose envs' close() never ran."""
    env = make_vec_env("FailsFirstCopy-test", 3, "async", env_kwargs={"directory": str(tmp_path)})
    env.reset(seed=0)
    with pytest.raises(AsyncEnvError, match="copy 0 broke"):
        env.step(np.zeros(3, dtype=int))
    env.close()
    closed = {int(p.name) for p in tmp_path.iterdir()} - {os.getpid()}  # the parent's copy (the spaces) aside
    assert len(closed) == 3, closed  # the failing copy's own exit, and the other two workers' copies


def test_closing_with_a_step_pending_does_not_hang():
    """A close while a step is pending (gymnasium's step_async, not answered yet) sent the close call after it and
    read the step's answers as the copies' close() errors; gymnasium's close then read the close answers as the
    step's (an error) or waited for answers already read (forever). Such a close is refused by gymnasium's call, and the workers are stopped."""
    import threading

    env = make_vec_env("CartPole-v1", 2, "async")
    env.reset(seed=0)
    env.env.env.step_async(np.zeros(2, dtype=int))  # the AsyncVectorEnv behind AsyncErrors
    raised: list[BaseException] = []

    def close() -> None:
        try:
            env.close()
        except BaseException as exc:  # noqa: BLE001 - what the close raised, for the assertion
            raised.append(exc)

    closing = threading.Thread(target=close, daemon=True)
    closing.start()
    closing.join(timeout=20)
    assert not closing.is_alive() and raised == []
    assert not any(process.is_alive() for process in env.env.env.processes)
