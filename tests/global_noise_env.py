"""An env whose observations are noise from the global random streams (Python's ``random``, NumPy's legacy
``np.random``, torch's), as an env of ``random`` or ``np.random.rand`` calls has: nothing of it follows
``reset(seed=...)``, so whatever else draws from those streams during a run changes its episodes. With frames
(``rgb_array``) for recordings. Registered as ``GlobalNoise-v0``."""
import random

import gymnasium as gym
import numpy as np
import torch


class GlobalNoiseEnv(gym.Env):
    """20-step episodes of noise from the global streams, with (blank) frames."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def _obs(self):
        return np.array([random.random(), np.random.random(), float(torch.rand(1))], dtype=np.float32)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):  # noqa: D102
        self.t += 1
        obs = self._obs()
        return obs, float(obs[0] > 0.5) + float(action), False, self.t >= 20, {}

    def render(self):  # noqa: D102
        return np.zeros((16, 16, 3), dtype=np.uint8)


if "GlobalNoise-v0" not in gym.registry:
    gym.register("GlobalNoise-v0", entry_point=GlobalNoiseEnv)
