"""Unusual Box spaces (asymmetric, unbounded, several dimensions, float64, one entry) through training,
evaluation, ``canter play`` and loading: tests/unusual_box_env.py's env, which takes no ``render_mode``."""
from __future__ import annotations

import pytest

from canter.envs.make import make_env
from canter.errors import CanterError
from canter.play import make_render_env

ENV = "unusual_box_env:UnusualBox-v0"


def test_an_env_without_render_mode_is_made_for_play_without_one():
    # gymnasium passes render_mode=None on to the constructor: a TypeError traceback from `canter play`
    env = make_env(ENV)
    obs, _ = env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()


def test_rendering_an_env_without_render_mode_is_a_canter_error():
    with pytest.raises(CanterError, match="cannot render: its constructor takes no render_mode"):
        make_render_env(ENV, "rgb_array")
