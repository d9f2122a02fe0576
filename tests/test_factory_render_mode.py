"""A canter-registered factory that takes no ``render_mode``: ``canter play --video-dir``, ``--render`` and
``--record-every`` say it cannot render and what the factory needs, as they do for a Gymnasium id whose constructor
takes none (it was "cannot make env 'ID' (render_mode='rgb_array', env_kwargs {}): f() got an unexpected keyword
argument 'render_mode'", which read as the user's env_kwargs at fault and named no way out)."""
from __future__ import annotations

import gymnasium as gym
import pytest

from canter.envs import make_env
from canter.errors import CanterError
from canter.registry import register


@register("env", "NoRenderModeFactory-test")
def no_render_mode_factory(size=3):
    """CartPole, made without a render mode."""
    return gym.make("CartPole-v1")


def test_a_factory_without_render_mode_cannot_render_saying_what_to_change():
    with pytest.raises(CanterError, match=r"^'NoRenderModeFactory-test' cannot render: its registered factory "
                                          r"[\w.]*no_render_mode_factory refused render_mode='rgb_array', which --render, "
                                          r"--video-dir and --record-every pass \(.*unexpected keyword argument "
                                          r"'render_mode'\); take render_mode=None in the factory and give it to the "
                                          r"env it makes$"):
        make_env("NoRenderModeFactory-test", render_mode="rgb_array")
    env = make_env("NoRenderModeFactory-test", size=4)  # without rendering it is made as training makes it
    env.close()


class NoRenderModeEnv(gym.Env):
    """An env whose constructor takes no render_mode."""

    observation_space, action_space = gym.spaces.Discrete(2), gym.spaces.Discrete(2)

    def __init__(self, size=3):
        self.size = size


@register("env", "ForwardingFactory-test")
def forwarding_factory(**kwargs):
    """Passes its arguments, render_mode included, on to an env that takes none."""
    return NoRenderModeEnv(**kwargs)


def test_a_factory_that_passes_render_mode_on_is_not_told_to_take_it():
    """A factory taking **kwargs passes render_mode on: the env it makes refused it, and d35e51e's message told the
    user to 'take render_mode=None in the factory and give it to the env it makes', which it already did."""
    with pytest.raises(CanterError, match=r"^'ForwardingFactory-test' cannot render: the env its registered factory "
                                          r"[\w.]*forwarding_factory makes refused render_mode='rgb_array', which "
                                          r"--render, --video-dir and --record-every pass \(NoRenderModeEnv.__init__\(\) "
                                          r"got an unexpected keyword argument 'render_mode'\); its constructor must "
                                          r"take render_mode, as gymnasium's envs do$"):
        make_env("ForwardingFactory-test", render_mode="rgb_array")
