"""An env whose constructor has a bug of its own (a TypeError) and was given no env_kwargs: its traceback, not a
'bad env_kwargs' line.

make_vec_env answered every TypeError of a Gymnasium id's constructor with "bad env_kwargs for 'ID': ..." (no file,
no line), where no env_kwargs had been given; :func:`canter.errors.bad_env_kwargs` leaves such an error as it is
(the env's bug, whose traceback helps), as the other errors of a constructor are left.
"""
from __future__ import annotations

import pytest

import odd_api_env  # noqa: F401 (registers BuggyInit-v0)
from canter.envs import make_vec_env
from canter.errors import CanterError


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_constructor_bug_without_env_kwargs_keeps_its_traceback(vectorization):
    with pytest.raises(TypeError, match="has no len") as info:
        make_vec_env("odd_api_env:BuggyInit-v0", 2, vectorization)
    assert not isinstance(info.value, CanterError)


def test_misspelled_env_kwargs_key_is_still_one_line():
    with pytest.raises(CanterError, match=r"bad env_kwargs for 'CartPole-v1'.*did you mean 'render_mode'"):
        make_vec_env("CartPole-v1", 1, "sync", {"render_mod": None})


def test_a_required_argument_left_out_is_still_one_line():
    with pytest.raises(CanterError, match=r"bad env_kwargs for 'odd_api_env:NeedsSize-v0':.*required positional "
                                          r"argument: 'size'"):
        make_vec_env("odd_api_env:NeedsSize-v0", 1, "sync")


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_helper_argument_left_out_inside_the_constructor_keeps_its_traceback(vectorization):
    """'missing 1 required positional argument' raised inside the env's constructor (a helper of its own called
    without it) is the env's bug, not an argument the user left out: its traceback, not 'bad env_kwargs'."""
    with pytest.raises(TypeError, match=r"_map_size\(\) missing 1 required positional argument") as info:
        make_vec_env("odd_api_env:HelperArgLeftOut-v0", 2, vectorization)
    assert not isinstance(info.value, CanterError)


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_factory_required_argument_left_out_is_one_line_too(vectorization):
    """As for a Gymnasium id: a canter-registered factory's required argument not given is one line ('bad env_kwargs'),
    not a traceback ending in canter's own code."""
    with pytest.raises(CanterError, match=r"bad env_kwargs for 'odd_api_env:OddSizedFactory-v0':.*required positional "
                                          r"argument: 'size'"):
        make_vec_env("odd_api_env:OddSizedFactory-v0", 1, vectorization)
