"""An env whose step() or reset() returns an info that is not a dict: a one-line error naming the env.

It was an AssertionError traceback from gymnasium's passive env checker (sync copies of a Gymnasium id, first step),
or an AttributeError traceback from the vector env ('list' object has no attribute 'items': later steps, a
canter-registered factory's env, async copies); the errors of sync copies did not name the env.
"""
from __future__ import annotations

import numpy as np
import pytest

import odd_api_env  # noqa: F401 (registers the envs)
from canter.envs import make_vec_env
from canter.errors import CanterError


@pytest.mark.parametrize("env_id", ["odd_api_env:InfoList-v0", "odd_api_env:InfoNone-v0"])
@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_step_info_not_a_dict_is_one_line(env_id, vectorization):
    env = make_vec_env(env_id, 2, vectorization)
    try:
        env.reset(seed=0)
        with pytest.raises(CanterError) as info:
            for _ in range(3):
                env.step(np.array([0, 1]))
    finally:
        env.close()
    text = str(info.value)
    assert "\n" not in text and env_id in text and "info" in text and "dict" in text, text


@pytest.mark.parametrize("kind", ["InfoList", "InfoNone"])
def test_factory_step_info_not_a_dict_is_one_line(kind):
    env = make_vec_env("odd_api_env:OddFactory-v0", 1, "sync", {"kind": kind})
    try:
        env.reset(seed=0)
        with pytest.raises(CanterError, match=r"env 'odd_api_env:OddFactory-v0'.*step\(\) returned .*info.*dict"):
            for _ in range(3):
                env.step(np.array([0]))
    finally:
        env.close()


@pytest.mark.parametrize("env_id,kwargs", [("odd_api_env:ResetInfoNone-v0", None),
                                           ("odd_api_env:OddFactory-v0", {"kind": "ResetInfoNone"})])
def test_reset_info_not_a_dict_is_one_line(env_id, kwargs):
    env = make_vec_env(env_id, 2, "sync", kwargs)
    try:
        with pytest.raises(CanterError, match=rf"env '{env_id}': the env's reset\(\) returned \(obs, NoneType\) where "
                                             r"info must be a dict"):
            env.reset(seed=0)
    finally:
        env.close()


def test_sync_errors_name_the_env():
    env = make_vec_env("odd_api_env:OddFactory-v0", 2, "sync")
    env.reset(seed=0)
    with pytest.raises(CanterError, match=r"^env 'odd_api_env:OddFactory-v0': the env's step\(\) returned a reward"):
        env.env.envs[0].step = lambda action: (np.zeros(3, np.float32), np.array([1.0]), False, False, {})
        env.step(np.array([0, 1]))
    env.close()


@pytest.mark.parametrize("env_id,kwargs", [("odd_api_env:StepNone-v0", None),
                                           ("odd_api_env:OddFactory-v0", {"kind": "StepNone"})])
@pytest.mark.parametrize("n_envs,vectorization", [(1, "sync"), (2, "sync"), (2, "async")])
def test_step_returning_none_is_one_line(env_id, kwargs, n_envs, vectorization):
    env = make_vec_env(env_id, n_envs, vectorization, kwargs)
    try:
        env.reset(seed=0)
        with pytest.raises(CanterError, match=rf"env '{env_id}'.*step\(\) returned NoneType, not \(obs, reward, "
                                              r"terminated, truncated, info\)"):
            env.step(np.zeros(n_envs, np.int64))
    finally:
        env.close()


@pytest.mark.parametrize("env_id,kwargs", [("odd_api_env:BuggyStep-v0", None),
                                           ("odd_api_env:OddFactory-v0", {"kind": "BuggyStep"})])
@pytest.mark.parametrize("n_envs,vectorization", [(1, "sync"), (2, "sync"), (2, "async")])
def test_env_own_unpacking_bug_in_step_is_not_taken_for_a_none(env_id, kwargs, n_envs, vectorization):
    """A TypeError 'cannot unpack non-iterable NoneType object' raised inside the env's own step() is its bug: sync
    copies keep its traceback, async ones name its file and line; neither says that step() returned None."""
    env = make_vec_env(env_id, n_envs, vectorization, kwargs)
    try:
        env.reset(seed=0)
        with pytest.raises((TypeError, CanterError)) as info:
            env.step(np.zeros(n_envs, np.int64))
    finally:
        env.close()
    text = str(info.value)
    assert "returned NoneType" not in text, text
    if vectorization == "sync":
        assert type(info.value) is TypeError and info.traceback[-1].name == "step", text
    else:
        assert "odd_api_env.py" in text and "cannot unpack" in text, text
