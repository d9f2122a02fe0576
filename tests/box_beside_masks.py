"""``pettingzoo:tests.box_beside_masks``: ``agent_0`` acts in Discrete(3) with its mask in infos (its target and one
other allowed) and earns 1 for its target; ``agent_1`` acts in Box(-1, 1, (1,)), has no mask and earns -(a - x)^2.
Episodes of 8 steps. The env raises on a masked action."""
import functools
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class BoxBesideMasks(ParallelEnv):
    metadata = {"name": "box_beside_masks_v0"}

    def __init__(self):
        self.possible_agents = ["agent_0", "agent_1"]
        self.rng = np.random.default_rng()

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (3,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return spaces.Discrete(3) if agent == "agent_0" else spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _obs(self):
        self.target = int(self.rng.integers(3))
        self.x = float(self.rng.uniform(-1, 1))
        self.mask = np.zeros(3, np.int8)
        self.mask[self.target] = self.mask[(self.target + 1) % 3] = 1
        obs = {"agent_0": np.eye(3, dtype=np.float32)[self.target], "agent_1": np.array([self.x, 0, 0], np.float32)}
        return obs, {"agent_0": {"action_mask": self.mask.copy()}, "agent_1": {}}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        return self._obs()

    def step(self, actions):
        assert self.mask[int(actions["agent_0"])], "masked action"
        rew = {"agent_0": float(int(actions["agent_0"]) == self.target),
               "agent_1": -float((float(np.asarray(actions["agent_1"]).reshape(-1)[0]) - self.x) ** 2)}
        self.t += 1
        done = self.t >= 8
        obs, infos = self._obs()
        term = {a: False for a in self.agents}
        trunc = {a: done for a in self.agents}
        if done:
            self.agents = []
        return obs, rew, term, trunc, infos


parallel_env = BoxBesideMasks
