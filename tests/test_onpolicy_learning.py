"""Fast learning tests for A2C, REINFORCE, TRPO, NPG and ACER: CartPole-v1 with the shipped presets,
and a continuous task for every algorithm that supports Box actions. Each asserts a reward."""
import gymnasium as gym
import numpy as np
import pytest
from test_learning import _best_eval

from canter.registry import register


class PointToGoal(gym.Env):
    """Move a point on a line to the origin: ``x += 0.25 * a`` with ``a`` in [-1, 1], reward ``-|x|``.

    Episodes start at ``x ~ U(-1.5, 1.5)`` and are truncated after 16 steps (so every episode
    tests bootstrapping on truncation). Standing still returns about -12, the best policy about -1.
    """

    observation_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode=None):
        self.x = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(self.np_random.uniform(-1.5, 1.5))
        return np.array([self.x], np.float32), {}

    def step(self, action):
        self.x = float(np.clip(self.x + 0.25 * float(np.clip(action[0], -1.0, 1.0)), -2.0, 2.0))
        return np.array([self.x], np.float32), -abs(self.x), False, False, {}


register("env", "PointToGoal-v0")(lambda render_mode=None, **kw: gym.wrappers.TimeLimit(PointToGoal(), 16))


@pytest.mark.parametrize("algo, budget", [
    ("a2c", 100_000), ("reinforce", 150_000), ("trpo", 40_000), ("npg", 50_000), ("acer", 120_000),
])
def test_preset_solves_cartpole(algo, budget):
    best, steps = _best_eval(algo, "CartPole-v1", max_steps=budget)
    assert best >= 475, f"{algo} reached only {best} in {steps} steps"


@pytest.mark.parametrize("algo, kw", [
    ("a2c", dict(n_steps=16, gae_lambda=0.95, normalize_advantage=True)),
    ("reinforce", dict(n_steps=64)),
    ("npg", dict(n_steps=512, batch_size=256)),
])
def test_continuous_point_to_goal(algo, kw):
    best, steps = _best_eval(algo, "PointToGoal-v0", seed=0, max_steps=15_000, eval_every=5000, eval_episodes=20, **kw)
    assert best >= -2.5, f"{algo} reached only {best} in {steps} steps (standing still: about -12)"


def test_trpo_pendulum_preset():
    best, steps = _best_eval("trpo", "Pendulum-v1", max_steps=75_000, target_reward=-250)
    assert best >= -250, f"TRPO reached only {best} on Pendulum in {steps} steps"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("algo, env, threshold", [
    ("a2c", "CartPole-v1", 500), ("reinforce", "CartPole-v1", 500), ("trpo", "CartPole-v1", 500),
    ("npg", "CartPole-v1", 500), ("acer", "CartPole-v1", 500), ("trpo", "Pendulum-v1", -200),
    ("npg", "Pendulum-v1", -200), ("a2c", "Acrobot-v1", -100),
])
def test_presets_other_seeds(algo, env, threshold, seed):
    best, _ = _best_eval(algo, env, seed=seed)
    assert best >= threshold
