"""Async env copies whose close() raises: one warning for all the workers (each worker warned on its own, the same
line once per worker), and none where no close() raises."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import odd_api_env  # noqa: F401 - registers odd_api_env:CloseRaises-v0
from canter.envs import make_vec_env, vector
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
