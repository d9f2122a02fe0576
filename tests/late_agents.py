"""A PettingZoo parallel env whose agents join after reset, for tests: ``pettingzoo:tests.late_agents``.

``agent_0`` is present from the reset; ``agent_1`` joins the episode after step ``join_at`` (it is in
``possible_agents`` but not in ``agents`` at reset, and appears in the observations and ``agents`` that
step returns). Each present agent sees a one-hot target among 3 and earns 1 when its action matches
it; an episode lasts 8 steps (every agent still in it truncated). So the best returns are 8 for
``agent_0`` and ``8 - join_at`` for ``agent_1``. On the step it joins, ``agent_1`` gets ``join_reward``
(default 100) in the step's rewards: no action of its own earned it, so canter must leave it out.
With ``respawn=True`` an agent that misses its target leaves the episode (terminated, reward 0) and
is back, a new trajectory, one step later (absent for one step), if the episode has not ended.
"""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

LENGTH = 8


class LateAgents(ParallelEnv):
    """Two agents rewarded for matching their own one-hot target; the second joins late."""

    metadata = {"name": "late_agents_v0"}

    def __init__(self, join_at: int = 3, respawn: bool = False, join_reward: float = 100.0) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.join_at, self.respawn, self.join_reward = join_at, respawn, join_reward
        self.state_space = spaces.Box(0.0, 1.0, (6,), np.float32)
        self.rng = np.random.default_rng()

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Box(0.0, 1.0, (3,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Discrete(3)

    def _observe(self) -> dict:
        self.targets = dict(zip(self.possible_agents, self.rng.integers(0, 3, 2).tolist()))
        return {a: np.eye(3, dtype=np.float32)[self.targets[a]] for a in self.agents}

    def state(self) -> np.ndarray:  # noqa: D102
        return np.concatenate([np.eye(3, dtype=np.float32)[self.targets[a]] * (a in self.agents)
                               for a in self.possible_agents])

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = ["agent_0"]
        self.t, self.away = 0, {}
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        if sorted(actions) != sorted(self.agents):
            raise ValueError(f"actions for {sorted(actions)}, but the agents are {sorted(self.agents)}")
        hits = {a: int(actions[a]) == self.targets[a] for a in self.agents}
        rewards = {a: float(hit) for a, hit in hits.items()}
        self.t += 1
        term = {a: self.respawn and not hits[a] for a in self.agents}
        trunc = {a: self.t >= LENGTH and not term[a] for a in self.agents}
        ended = [a for a in self.agents if term[a] or trunc[a]]
        back = [a for a, t in self.away.items() if t < self.t] if self.t < LENGTH else []
        self.away = {a: t for a, t in self.away.items() if a not in back}
        self.away.update({a: self.t for a in ended if self.t < LENGTH})
        joining = back + (["agent_1"] if self.t == self.join_at else [])
        self.agents = [a for a in self.possible_agents if (a in self.agents and a not in ended) or a in joining]
        rewards.update({a: self.join_reward for a in joining})
        obs = self._observe()
        for a in ended:  # an agent's final observation is in the step it leaves in
            obs[a] = np.eye(3, dtype=np.float32)[self.targets[a]]
        return obs, rewards, term, trunc, {a: {} for a in obs}


def parallel_env(**kwargs: object) -> LateAgents:
    """PettingZoo's factory."""
    return LateAgents(**kwargs)
