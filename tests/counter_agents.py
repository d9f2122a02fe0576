"""A PettingZoo parallel env for tests, ``pettingzoo:tests.counter_agents``: agent ``i`` of ``n_agents`` observes
``[t, i]`` (``t`` the episode's steps), earns 1 a step and is truncated after ``3 + 2 i`` steps (it leaves the
episode; the episode ends with the last agent), so each agent's final observation differs from its next first."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class CounterAgents(ParallelEnv):
    """See the module docstring."""

    metadata = {"name": "counter_agents_v0"}

    def __init__(self, n_agents: int = 2, render_mode: str | None = None) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.render_mode, self.t = render_mode, 0

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Box(0.0, 100.0, (2,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Discrete(2)

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.possible_agents.index(agent)], np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        self.t = 0
        self.agents = list(self.possible_agents)
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        self.t += 1
        obs = {a: self._obs(a) for a in self.agents}
        truncated = {a: self.t >= 3 + 2 * self.possible_agents.index(a) for a in self.agents}
        rewards, terminated = {a: 1.0 for a in self.agents}, {a: False for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not truncated[a]]
        return obs, rewards, terminated, truncated, infos


def parallel_env(**kwargs: Any) -> CounterAgents:
    """The env (PettingZoo's entry point name)."""
    return CounterAgents(**kwargs)
