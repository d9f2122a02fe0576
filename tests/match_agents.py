"""A tiny cooperative PettingZoo parallel env for tests: ``pettingzoo:match_agents``.

Each of ``n_agents`` agents sees a one-hot target among 3 and earns 1 when its action matches it
(``team=True``: every agent earns 1 only when all match); an episode lasts 8 steps (truncation).
A shared policy that reads its observation earns 8 per agent. ``state()`` is every agent's target.
"""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

LENGTH = 8


class MatchAgents(ParallelEnv):
    """Agents rewarded for matching their own one-hot target."""

    metadata = {"name": "match_agents_v0"}

    def __init__(self, n_agents: int = 2, leave_early: bool = False, team: bool = False, state: bool = True) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.leave_early = leave_early  # agent_0 terminates a step before the others (not supported)
        self.team = team  # every agent earns 1 only when all match (a reward no agent earns alone)
        if state:  # PettingZoo's global state: every agent's target
            self.state_space = spaces.Box(0.0, 1.0, (3 * n_agents,), np.float32)
        self.rng = np.random.default_rng()

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Box:  # noqa: D102
        return spaces.Box(0.0, 1.0, (3,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Discrete:  # noqa: D102
        return spaces.Discrete(3)

    def _observe(self) -> dict:
        return {a: np.eye(3, dtype=np.float32)[t] for a, t in zip(self.agents, self.targets)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.targets = self.rng.integers(0, 3, len(self.agents))
        return self._observe(), {a: {} for a in self.agents}

    def state(self) -> np.ndarray:  # noqa: D102
        return np.eye(3, dtype=np.float32)[self.targets].reshape(-1)

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        rewards = {a: float(actions[a] == t) for a, t in zip(self.agents, self.targets)}
        if self.team:
            rewards = dict.fromkeys(rewards, float(all(rewards.values())))
        self.t += 1
        self.targets = self.rng.integers(0, 3, len(self.agents))
        obs = self._observe()
        trunc = {a: self.t >= LENGTH for a in self.agents}
        term = {a: self.leave_early and a == "agent_0" and self.t >= LENGTH - 1 for a in self.agents}
        infos = {a: {} for a in self.agents}
        if all(trunc.values()):
            self.agents = []
        return obs, rewards, term, trunc, infos


def parallel_env(**kwargs: object) -> MatchAgents:
    """PettingZoo's factory convention."""
    return MatchAgents(**kwargs)
