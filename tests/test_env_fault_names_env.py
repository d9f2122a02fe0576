"""A step() of an async worker's env copy that returns None (or NaN) as the observation or reward: the divergence
guard's one-line error names the env id (it named only the sub-env)."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from canter.cli import main
from canter.registry import register


class NoneAfter(gym.Wrapper):
    """CartPole whose step() returns None (or NaN) as its ``what`` (obs or reward) after ``after`` steps."""

    def __init__(self, after: int = 20, what: str = "obs", nan: bool = False, **kw):
        super().__init__(gym.make("CartPole-v1", **kw))
        self.after, self.what, self.value, self.count = after, what, float("nan") if nan else None, 0

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.count += 1
        if self.count > self.after:
            obs, reward = (self.value, reward) if self.what == "obs" else (obs, self.value)
        return obs, reward, term, trunc, info


register("env", "NoneAfterCartPole-test")(NoneAfter)


@pytest.mark.parametrize("kwargs, expected", [
    ("{what: obs}", "training diverged at step \\d+: non-finite observation from the env \\(sub-env \\d\\)"),
    ("{what: reward}", "the env's step\\(\\) returned a reward that is not a finite number \\(None, NaN or inf\\)"),
    ("{what: reward, nan: true}", "the env's step\\(\\) returned a reward that is not a finite number"),
])
def test_an_async_workers_none_observation_or_reward_names_the_env(tmp_path, capsys, kwargs, expected):
    code = main(["train", "ppo", "--env", "NoneAfterCartPole-test", "--env-kwargs", kwargs, "--vectorization", "async",
                 "--n-envs", "2", "--set", "n_steps=16", "--set", "batch_size=32", "--set", "target_reward=null",
                 "--set", "tensorboard=false", "--max-steps", "256", "--run-dir", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("canter: error: env 'NoneAfterCartPole-test': ") and re.search(expected, err), err


def test_a_sync_copys_none_observation_among_arrays_is_one_line_naming_the_env():
    """One sync copy's step() returning None while the others return arrays: NumPy's 'all input arrays must have the
    same shape' traceback from gymnasium's stacking of them (all copies at once: 'Output array ...', already one line)."""
    import numpy as np

    from canter.envs import make_vec_env
    from canter.errors import CanterError

    env = make_vec_env("NoneAfterCartPole-test", 2, "sync", {"after": 2})
    copy = env.env.envs[1]
    while not isinstance(copy, NoneAfter):
        copy = copy.env
    copy.after = 10**6  # only the first copy returns None
    env.reset(seed=0)
    with pytest.raises(CanterError, match=r"^env 'NoneAfterCartPole-test': the env returned an observation that does "
                                          r"not fit its observation space Box\(shape=\(4,\), float32\): all input "
                                          r"arrays must have the same shape$"):
        for _ in range(3):
            env.step(np.zeros(2, dtype=int))
    env.close()


class _OwnStackBug(gym.Env):
    """An env whose own step() code stacks arrays of two shapes (its bug, not its observation's)."""

    observation_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        np.stack([np.zeros(2), np.zeros(3)])  # all input arrays must have the same shape
        return np.zeros(4, np.float32), 0.0, False, False, {}


register("env", "OwnStackBug-test")(_OwnStackBug)


def test_an_envs_own_stacking_error_is_not_blamed_on_its_observation():
    """NumPy's 'all input arrays must have the same shape' raised by the env's own code in step() was taken for
    gymnasium's stacking of the copies' observations: 'the env returned an observation that does not fit', which hid
    the env's line (its traceback)."""
    from canter.envs import make_vec_env

    env = make_vec_env("OwnStackBug-test", 2, "sync")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="all input arrays must have the same shape") as raised:
        env.step(np.zeros(2, dtype=int))
    env.close()
    assert "observation" not in str(raised.value)


class _OwnUnpackBug(_OwnStackBug):
    """An env whose own step() code unpacks four values into five (its bug: it returns five)."""

    def _helper(self):
        return 1, 2, 3, 4

    def step(self, action):
        a, b, c, d, e = self._helper()  # not enough values to unpack (expected 5, got 4)
        return np.zeros(4, np.float32), 0.0, False, False, {}


register("env", "OwnUnpackBug-test")(_OwnUnpackBug)


@pytest.mark.parametrize("n_envs", [1, 2])
def test_an_envs_own_unpacking_error_is_not_taken_for_an_old_gym_step(n_envs):
    """'(expected 5, got 4)' raised by the env's own code in step() was taken for gymnasium unpacking an old gym env's
    4 values: 'step() returned 4 values, not 5', which hid the env's line (the sibling of the stacking error above)."""
    from canter.envs import make_vec_env

    env = make_vec_env("OwnUnpackBug-test", n_envs, "sync")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected 5, got 4") as raised:
        env.step(np.zeros(n_envs, dtype=int))
    env.close()
    assert "4 values, not 5" not in str(raised.value)


def test_an_async_copys_own_unpacking_error_names_its_line():
    from canter.envs import make_vec_env

    env = make_vec_env("OwnUnpackBug-test", 2, "async")
    try:
        env.reset(seed=0)
        with pytest.raises(Exception, match=r"step\(\) raised ValueError: not enough values .*test_env_fault_names_env"):
            env.step(np.zeros(2, dtype=int))
    finally:
        env.close()
