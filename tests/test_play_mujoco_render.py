"""Rendering a MuJoCo env where there is no display (``--record-every``, ``--video-dir``, ``--render``).

gymnasium's MuJoCo renderer tries GLFW first unless MUJOCO_GL says otherwise; without a display that was a
``mujoco.FatalError`` traceback (exit 1) for ``--record-every`` / ``--video-dir``, and GLFW's C assertion aborted
the process for ``--render``. MuJoCo is not installed for the tests: a stand-in ``MujocoEnv`` class takes the
place of gymnasium's, as :func:`canter.play._is_mujoco` finds it.
"""
from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec

from canter.errors import CanterError
from canter.play import make_render_env

ENV_ID = "CanterFakeMujoco-v0"


class FakeMujocoEnv(gym.Env):
    """Stands for gymnasium's ``MujocoEnv``; its render fails as MuJoCo's does without an OpenGL context."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 20}
    rendered = 0

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.zeros(3, np.float32), 0.0, False, False, {}

    def render(self):
        type(self).rendered += 1
        raise RuntimeError("an OpenGL platform library has not been loaded into this process")


@pytest.fixture
def headless_mujoco(monkeypatch):
    """The stand-in env registered, gymnasium's MuJoCo module replaced by one naming it, no display."""
    monkeypatch.setitem(gym.registry, ENV_ID, EnvSpec(ENV_ID, entry_point=FakeMujocoEnv, max_episode_steps=10))
    monkeypatch.setitem(__import__("sys").modules, "gymnasium.envs.mujoco.mujoco_env",
                        types.SimpleNamespace(MujocoEnv=FakeMujocoEnv))
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL"):
        monkeypatch.setenv(name, "")  # recorded, so that what make_render_env sets is undone after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(FakeMujocoEnv, "rendered", 0)


def test_recording_a_mujoco_env_that_cannot_render_is_one_line_naming_mujoco_gl(headless_mujoco):
    with pytest.raises(CanterError, match="rendering 'CanterFakeMujoco-v0' failed: an OpenGL platform library .*"
                                          "set MUJOCO_GL=egl or MUJOCO_GL=osmesa"):
        make_render_env(ENV_ID, "rgb_array")


def test_recording_without_a_display_picks_egl_unless_mujoco_gl_is_set(headless_mujoco, monkeypatch):
    with pytest.raises(CanterError):
        make_render_env(ENV_ID, "rgb_array")
    import os

    assert os.environ["MUJOCO_GL"] == "egl"  # GLFW, gymnasium's first choice, needs a display
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    with pytest.raises(CanterError):
        make_render_env(ENV_ID, "rgb_array")
    assert os.environ["MUJOCO_GL"] == "osmesa"  # the user's choice stays


def test_a_window_without_a_display_is_refused_before_rendering(headless_mujoco):
    with pytest.raises(CanterError, match=r"in a window \(--render\) needs a display, and there is none"):
        make_render_env(ENV_ID, "human")
    assert FakeMujocoEnv.rendered == 0  # GLFW's assertion would have aborted the process
