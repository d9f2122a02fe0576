"""vectorization async with an info that cannot be pickled (a lambda): one line naming the env and what to do.

gymnasium's worker failed to send its answer and the parent raised a bare "AttributeError: Can't pickle local
object ..." with a traceback of gymnasium's frames (sync copies take such an info as it is).
"""
from __future__ import annotations

import numpy as np
import pytest

import odd_api_env  # noqa: F401 (registers InfoUnpicklable-v0)
from canter.envs import make_vec_env
from canter.envs.workers import AsyncEnvError


def test_unpicklable_info_is_one_line():
    env = make_vec_env("odd_api_env:InfoUnpicklable-v0", 2, "async")
    processes = env.env.unwrapped.processes
    try:
        env.reset(seed=0)
        with pytest.raises(AsyncEnvError) as info:
            env.step(np.zeros(2, np.int64))
    finally:
        env.close()
    text = str(info.value)
    assert "\n" not in text and text.startswith("env 'odd_api_env:InfoUnpicklable-v0' failed in an async worker: "
                                                 "step() returned what cannot be sent to the parent process"), text
    assert "pickle" in text and "--vectorization sync" in text, text
    for p in processes:
        p.join(5)
    assert not any(p.is_alive() for p in processes)


def test_sync_copies_take_it():
    env = make_vec_env("odd_api_env:InfoUnpicklable-v0", 2, "sync")
    env.reset(seed=0)
    env.step(np.zeros(2, np.int64))
    env.close()
