"""A parallel env whose Discrete agents report their action masks in infos and whose other agents act in Box spaces
(which no mask applies to): the Box agents keep their observations and the others act under their masks. Before,
ParallelVectorEnv sized a mask for every agent, so the env was refused with 'action masks need a Discrete,
MultiDiscrete or MultiBinary action space, not Box' (naming neither the env nor an agent)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from canter.envs.make import make_vec_env
from canter.envs.masks import mask_width

ENV = "pettingzoo:tests.box_beside_masks"


def test_box_agents_beside_info_masks_keep_their_observations_and_the_others_act_masked():
    env = make_vec_env(ENV, 2, policies="agent")
    try:
        spaces = env.single_observation_space
        assert mask_width(spaces["agent_0"]) == 3 and spaces["agent_0"].shape == (6,)
        assert mask_width(spaces["agent_1"]) == 0 and spaces["agent_1"] == gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        obs = env.reset(seed=0)
        for _ in range(12):  # across an episode's end (8 steps): the env raises on a masked action
            masks = obs["agent_0"][:, 3:]
            games = env.env.envs
            assert all(np.array_equal(m, g.mask) for m, g in zip(masks, games))
            step = env.step({"agent_0": masks.argmax(1), "agent_1": np.zeros((2, 1), np.float32)})
            obs = step.obs
    finally:
        env.close()
