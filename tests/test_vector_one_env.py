"""One copy of a gymnasium sync vector env is stepped by ``canter.envs.vector._step_one``, gymnasium's own
statements for that case without its per-step dispatch: the same steps, infos, autoresets and errors."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.envs.vector import VecEnv, _step_one, _steps_one
from canter.errors import CanterError


class InfoEnv(gym.Env):
    """Episodes of random length (terminated or truncated), a reward per step and an info on some steps."""

    observation_space = gym.spaces.Box(-10, 10, (3,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, bad: str = "") -> None:
        self.bad = bad

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.normal(size=3).astype(np.float32), {"start": 1.0}

    def step(self, action):
        self.t += 1
        obs = self.np_random.normal(size=3).astype(np.float32) + float(action)
        end = self.np_random.random()
        info = {"t": self.t, "tag": np.arange(2) * self.t} if self.t % 3 == 0 else {}
        reward = float(action) - 1.0
        values = {"reward": reward, "terminated": bool(end < 0.1), "truncated": bool(end > 0.92)}
        if self.bad:
            values[self.bad] = np.array([values[self.bad]])
        return obs, values["reward"], values["terminated"], values["truncated"], info


def _sync(**kw) -> gym.vector.SyncVectorEnv:
    return gym.vector.SyncVectorEnv([lambda: InfoEnv(**kw)], autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)


def test_one_copy_steps_as_gymnasium_does():
    fast, plain = VecEnv(_sync()), VecEnv(_sync())
    plain._one = False  # gymnasium's own SyncVectorEnv.step
    assert fast._one and _steps_one(fast.env)
    obs_f, obs_p = fast.reset(seed=3), plain.reset(seed=3)
    np.testing.assert_array_equal(obs_f, obs_p)
    actions = np.random.default_rng(0).integers(0, 3, size=(300, 1))
    ends = 0
    for a in actions:
        sf, sp = fast.step(a), plain.step(a)
        for x, y in zip(sf, sp):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        assert fast.info.keys() == plain.info.keys()
        for key in fast.info:
            np.testing.assert_array_equal(fast.info[key], plain.info[key])
        np.testing.assert_array_equal(fast.finished_returns, plain.finished_returns)
        ends += int(sf.terminated[0] or sf.truncated[0])
        assert sf.obs is not fast.env._observations  # a copy, as gymnasium's copy=True step returns
    assert ends > 20  # episodes ended (autoresets ran) both ways


def test_only_one_copy_of_gymnasium_sync_env_takes_it():
    assert not _steps_one(gym.vector.SyncVectorEnv([InfoEnv, InfoEnv]))
    assert not _steps_one(gym.vector.SyncVectorEnv([InfoEnv], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
    env = _sync()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="zip"):  # two actions for one copy: gymnasium's own step refuses them
        VecEnv(env).step(np.zeros(2, dtype=np.int64))
    env.reset(seed=0)
    _step_one(env, np.ones(1, dtype=np.int64))


def _first_step(env: VecEnv) -> str:
    env.reset(seed=0)
    try:
        return repr(tuple(env.step(np.zeros(1, dtype=np.int64))))
    except CanterError as exc:
        return str(exc)


@pytest.mark.parametrize("bad", ["reward", "terminated", "truncated"])
def test_a_step_value_returned_as_an_array_is_answered_as_by_gymnasium(bad):
    """A reward returned as an array is the one-line error naming it (its one-value array could not be stored);
    a flag as a one-value array is taken as gymnasium's own step takes it."""
    fast, plain = VecEnv(_sync(bad=bad)), VecEnv(_sync(bad=bad))
    plain._one = False
    assert fast._one
    answer = _first_step(fast)
    assert answer == _first_step(plain)
    assert ("returned a reward that is a sequence" in answer) == (bad == "reward")
