"""A canter-registered factory whose own code raises a TypeError: the error names the factory and where it raised it.

``canter play`` (make_env) said "cannot make env 'ID' (...): <the error's text>" and ``canter eval`` with env_kwargs
(make_vec_env) "bad env_kwargs for 'ID': <the error's text>", as if the user's arguments were at fault; a key the
factory (or the class it passes its arguments on to) does not take keeps its one line with the closest key."""
from __future__ import annotations

import gymnasium as gym
import pytest

from canter.envs import make_env, make_vec_env
from canter.errors import CanterError
from canter.registry import register


def _wrap(env, scale):
    return env


@register("env", "OwnTypeErrorFactory-test")
def own_type_error_factory(render_mode=None, size=3):
    """CartPole, but a bug of its own (a helper called without its argument) when rendering or sized."""
    env = gym.make("CartPole-v1", render_mode=render_mode)
    if render_mode is not None or size != 3:
        _wrap(env)  # the factory's own TypeError
    return env


class Corridor(gym.Wrapper):
    def __init__(self, length=3, render_mode=None):
        super().__init__(gym.make("CartPole-v1", render_mode=render_mode))


@register("env", "PassesKwargsOn-test")
def passes_kwargs_on(**kwargs):
    """A factory that passes its arguments on to a class."""
    return Corridor(**kwargs)


OWN = (r"env 'OwnTypeErrorFactory-test': its registered factory [\w.]*own_type_error_factory raised TypeError: "
       r"_wrap\(\) missing 1 required positional argument: 'scale' \(.*test_factory_own_errors.py, line \d+\)")


def test_play_names_the_factory_and_its_own_error():
    with pytest.raises(CanterError, match=OWN + r" \(render_mode='rgb_array'\)$"):
        make_env("OwnTypeErrorFactory-test", render_mode="rgb_array")


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_eval_with_env_kwargs_names_the_factory_and_its_own_error(vectorization):
    with pytest.raises(CanterError, match=OWN + r" \(env_kwargs \{'size': 4\}\)$"):
        make_vec_env("OwnTypeErrorFactory-test", 2, vectorization, {"size": 4})


def test_a_key_the_factory_does_not_take_is_still_the_friendly_line():
    with pytest.raises(CanterError, match=r"^cannot make env 'OwnTypeErrorFactory-test' \(env_kwargs \{'sise': 4\}\): "
                                          r".*unexpected keyword argument 'sise'; did you mean 'size'\?$"):
        make_env("OwnTypeErrorFactory-test", sise=4)
    with pytest.raises(CanterError, match=r"^bad env_kwargs for 'OwnTypeErrorFactory-test': .*unexpected keyword "
                                          r"argument 'sise'; did you mean 'size'\?$"):
        make_vec_env("OwnTypeErrorFactory-test", 1, "sync", {"sise": 4})


def test_a_key_refused_by_the_class_the_factory_passes_it_to_is_still_the_friendly_line():
    with pytest.raises(CanterError, match=r"^cannot make env 'PassesKwargsOn-test' .*Corridor.__init__\(\) got an "
                                          r"unexpected keyword argument 'lenght'; did you mean 'length'\?$"):
        make_env("PassesKwargsOn-test", render_mode="rgb_array", lenght=4)
    with pytest.raises(CanterError, match=r"^bad env_kwargs for 'PassesKwargsOn-test': .*'lenght'; did you mean"):
        make_vec_env("PassesKwargsOn-test", 1, "sync", {"lenght": 4})
