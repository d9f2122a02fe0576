"""An env that normalises its own observations or rewards (gymnasium's NormalizeObservation / NormalizeReward, as a
ported VecNormalize would be) is warned about when a run is made: each env copy keeps statistics of its own, so the
evaluation env's observations were scaled by statistics learnt from evaluation episodes alone (and canter eval's
from none), and its returns were of scaled rewards, without a word; Stable-Baselines3's EvalCallback evaluates with
the training statistics, frozen. The run's normalize_obs / normalize_reward do that."""
from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.wrappers import NormalizeObservation, NormalizeReward

import canter
from canter.errors import CanterWarning


@canter.register("env", "SelfNormalisingPendulum-v0")
def _self_normalising(**kwargs):
    return NormalizeReward(NormalizeObservation(gym.make("Pendulum-v1", **kwargs)))


def _warnings(env: str, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer("ppo", env, max_steps=256, eval_every=128, eval_episodes=1, n_envs=1, **kwargs)
        trainer.close()
    return [str(w.message) for w in caught if issubclass(w.category, CanterWarning)]


def test_an_env_that_normalises_itself_is_warned_about_naming_the_settings_that_freeze_the_statistics():
    found = [m for m in _warnings("SelfNormalisingPendulum-v0") if "normalises its own" in m]
    assert len(found) == 2, found
    observations, rewards = sorted(found)
    assert "NormalizeObservation" in observations and "--set normalize_obs=true" in observations
    assert "NormalizeReward" in rewards and "--set normalize_reward=true" in rewards


@pytest.mark.parametrize("sets", [[], ["normalize_obs=true", "normalize_reward=true"]])
def test_an_env_that_does_not_normalise_itself_is_not_warned_about(sets):
    assert not [m for m in _warnings("Pendulum-v1", sets=sets) if "normalises its own" in m]
