"""A recording during training (``record_every``) leaves the global random streams where training had them: with an
env that draws its noise from them, a run that records videos trains exactly as the same run without."""
import random

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.checkpoint import flatten_state

pytest.importorskip("imageio")


class GlobalNoiseFramesEnv(gym.Env):
    """20-step episodes of noise from the global streams (``random``, ``np.random``, ``torch.rand``), with frames."""

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


gym.register("GlobalNoiseFrames-v0", entry_point=GlobalNoiseFramesEnv)


def _weights(run_dir, record_every):
    agent = canter.train("ppo", env="GlobalNoiseFrames-v0", seed=3, max_steps=256, n_envs=2, n_steps=32,
                         batch_size=32, n_epochs=1, eval_episodes=0, record_every=record_every, run_dir=run_dir)
    return flatten_state(agent.state_dict())[1]


@pytest.mark.slow
def test_recordings_do_not_move_the_training_streams(tmp_path):
    plain, recorded = _weights(tmp_path / "plain", 0), _weights(tmp_path / "recorded", 64)
    assert list((tmp_path / "recorded" / "videos").glob("*.mp4"))
    assert plain.keys() == recorded.keys()
    assert all(torch.equal(plain[k], recorded[k]) for k in plain if isinstance(plain[k], torch.Tensor))
