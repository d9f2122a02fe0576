"""Unusual Box spaces (asymmetric, unbounded, several dimensions, float64, one entry) through training,
evaluation, ``canter play`` and loading: tests/unusual_box_env.py's env, which takes no ``render_mode``."""
from __future__ import annotations

import pytest
import unusual_box_env  # noqa: F401 - registers UnusualBox-v0

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


def test_the_unbounded_action_hint_names_a_wrapper_that_takes_infinite_bounds():
    # the hint was gymnasium's RescaleAction, which raises ValueError on an unbounded Box
    import gymnasium as gym
    import numpy as np

    from canter.registry import lookup

    env = gym.make("UnusualBox-v0", act_low=[-np.inf, 0.0], act_high=[np.inf, 1.0])
    with pytest.raises(ValueError, match="unbounded"):
        gym.wrappers.RescaleAction(env, -1.0, 1.0)
    with pytest.raises(CanterError, match="is unbounded") as info:
        lookup("algorithm", "sac").check_spaces(env.observation_space, env.action_space)
    assert "RescaleAction wrapper)" not in str(info.value)
    assert "ActionWrapper" in str(info.value)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("algo", ["sac", "td3bc"])
def test_squashed_actions_fill_a_box_as_wide_as_its_dtype(algo, dtype):
    # low + (a + 1) / 2 * (high - low) overflowed: -1 was NaN and every other action the top bound
    import gymnasium as gym
    import numpy as np

    from canter.agents.agent import Agent
    from canter.registry import lookup

    top = float(np.finfo(dtype).max)
    env = gym.make("UnusualBox-v0", act_low=[-top, -1e38], act_high=[top, 1e38], act_dtype=dtype)
    space = env.action_space
    algo_cls = lookup("algorithm", algo)
    agent = Agent(algo_cls(env.observation_space, space, algo_cls.Config(net_arch=[8])))
    actions = np.array([[-1, -1], [-0.5, 0.0], [0, 0], [0.5, 0.5], [1, 1]], np.float32)
    out = agent.to_env_actions(actions)
    assert out.dtype == space.dtype and all(space.contains(a) for a in out)
    np.testing.assert_allclose(out[:, 0], [-top, -top / 2, 0.0, top / 2, top], rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], [-1e38, 0.0, 0.0, 5e37, 1e38], rtol=1e-6)
    np.testing.assert_allclose(agent.from_env_actions(out), actions, atol=1e-6)


@pytest.mark.parametrize("algo, needs", [("sac", "a Box action space"), ("ppo", "Discrete or Box or MultiDiscrete")])
def test_a_tuple_action_space_is_refused_naming_its_entries(algo, needs):
    # the refusal described it as "Tuple(shape=None)"
    import gymnasium as gym

    from canter.registry import lookup

    actions = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (2,))))
    with pytest.raises(CanterError) as info:
        lookup("algorithm", algo).check_spaces(gym.spaces.Box(-1, 1, (3,)), actions)
    assert needs in str(info.value)
    assert ("action space is Tuple(Discrete(2), Box(shape=(2,), float32)); no canter algorithm acts in a Tuple action "
            "space" in str(info.value)), str(info.value)


def test_a_float64_box_as_wide_as_its_dtype_round_trips_through_checkpoint_json():
    # bounds of 1e308 or more were read back as infinite: the run's own env no longer matched its checkpoint
    import gymnasium as gym
    import numpy as np

    from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match

    top = float(np.finfo(np.float64).max)
    space = gym.spaces.Box(np.array([-top, -np.inf, -1.0]), np.array([top, np.inf, 1.5e308]), dtype=np.float64)
    back = space_from_dict(space_to_dict(space))
    np.testing.assert_array_equal(back.low, space.low)
    np.testing.assert_array_equal(back.high, space.high)
    assert spaces_match(space, back)
    # what checkpoints have always written for infinite bounds is still read as infinite
    old = {"type": "Box", "shape": [2], "dtype": "float64", "low": [-1e308, 0.0], "high": [1e308, 1.0]}
    assert space_from_dict(old).low[0] == -np.inf and space_from_dict(old).high[0] == np.inf


def test_random_actions_fill_a_float64_box_as_wide_as_its_dtype():
    # NumPy's uniform raised OverflowError (a traceback from canter collect without a policy, or with --epsilon)
    import gymnasium as gym
    import numpy as np

    from canter.envs.random_actions import random_env_actions

    top = float(np.finfo(np.float64).max)
    space = gym.spaces.Box(np.array([-top, 0.0]), np.array([top, 1.0]), dtype=np.float64)
    actions = random_env_actions(space, 2000, np.random.default_rng(0))
    assert actions.dtype == np.float64 and all(space.contains(a) for a in actions)
    assert (actions[:, 0] < -top / 2).any() and (actions[:, 0] > top / 2).any()  # spread over the whole range
    assert 0.0 <= actions[:, 1].min() < 0.1 and 0.9 < actions[:, 1].max() <= 1.0


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_warm_up_actions_of_a_box_of_integers_are_uniform_over_its_whole_numbers(algo):
    # a draw in [-1, 1] rescaled and rounded gave each bound half the chance of the numbers between (0: 25%, 1: 50%,
    # 2: 25%); gymnasium's Box.sample, and so Stable-Baselines3's warm-up, draws them uniformly
    import gymnasium as gym
    import numpy as np

    from canter.agents.agent import Agent
    from canter.registry import lookup
    from canter.trainers.off_policy import random_actions

    space = gym.spaces.Box(np.array([0, -3]), np.array([2, -1]), dtype=np.int64)
    algo_cls = lookup("algorithm", algo)
    agent = Agent(algo_cls(gym.spaces.Box(-1, 1, (3,)), space, algo_cls.Config(net_arch=[8])))
    env_actions, stored = random_actions(agent, 6000, np.random.default_rng(0))
    assert env_actions.dtype == space.dtype and all(space.contains(a) for a in env_actions[:100])
    for column, low in enumerate((0, -3)):
        share = np.bincount(env_actions[:, column] - low, minlength=3) / len(env_actions)
        np.testing.assert_allclose(share, 1 / 3, atol=0.03)
    np.testing.assert_array_equal(stored, agent.from_env_actions(env_actions))  # scaled, as SB3 stores them
    np.testing.assert_array_equal(np.unique(stored), [-1.0, 0.0, 1.0])
