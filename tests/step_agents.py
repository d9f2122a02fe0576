"""Two agents in episodes of one or two steps, for hand-computed checks: ``pettingzoo:tests.step_agents``.

Each agent observes its own fixed row (``agent_0``: ``[1, 0]``, ``agent_1``: ``[0, 1]``, times ``1 + t``) and
acts in ``Discrete(2)``; ``agent_i`` earns ``rewards[i][a]`` for its action ``a`` (defaults: ``agent_0`` 1 for
action 1, ``agent_1`` 2 for action 0). ``state()`` is ``[t, 10 + t]`` (declared by ``state_space``). With
``length=1`` both agents' episodes end on step 1 (``truncate``: truncated, else terminated); with ``length=2``
``agent_0`` terminates on step 1 (it leaves the episode) and ``agent_1`` plays a second step, whose end is
its truncation (``truncate``) or termination. With ``both=True`` every agent whose episode ends is reported
terminated *and* truncated (a game that ends on its time limit's step: PettingZoo allows both flags at once).
With ``masked=True`` observations are PettingZoo's ``{"observation", "action_mask"}`` dicts whose mask allows both
actions. With ``length=1, split=True`` ``agent_0`` terminates and ``agent_1`` is truncated on that step.
"""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class StepAgents(ParallelEnv):
    """Two agents, fixed observations and rewards per action, episodes of ``length`` steps."""

    metadata = {"name": "step_agents_v0"}

    def __init__(self, length: int = 1, truncate: bool = False, rewards: tuple = ((0.0, 1.0), (2.0, 0.0)),
                 both: bool = False, masked: bool = False, split: bool = False) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.length, self.truncate, self.table, self.both, self.masked = length, truncate, rewards, both, masked
        self.split = split
        self.state_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        box = spaces.Box(0.0, 10.0, (2,), np.float32)
        return spaces.Dict({"observation": box, "action_mask": spaces.MultiBinary(2)}) if self.masked else box

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.Discrete(2)

    def _observe(self) -> dict:
        obs = {a: np.eye(2, dtype=np.float32)[i] * (1 + self.t) for i, a in enumerate(self.possible_agents)
               if a in self.agents}
        return {a: {"observation": o, "action_mask": np.ones(2, np.int8)} for a, o in obs.items()} if self.masked else obs

    def state(self) -> np.ndarray:  # noqa: D102
        return np.array([self.t, 10 + self.t], np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        self.agents, self.t = list(self.possible_agents), 0
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        if sorted(actions) != sorted(self.agents):
            raise ValueError(f"actions for {sorted(actions)}, but the agents are {sorted(self.agents)}")
        rewards = {a: float(self.table[int(a[-1])][int(actions[a])]) for a in self.agents}
        self.t += 1
        last = self.t >= self.length
        term = {a: (a == "agent_0" or not (last and self.truncate)) and (last or a == "agent_0") for a in self.agents}
        trunc = {a: last and self.truncate and not term[a] for a in self.agents}
        if self.length == 1:
            term = {a: a == "agent_0" if self.split else not self.truncate for a in self.agents}
            trunc = {a: a != "agent_0" if self.split else self.truncate for a in self.agents}
        if self.both:
            term = trunc = {a: term[a] or trunc[a] for a in self.agents}
        obs = self._observe()
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        return obs, rewards, term, trunc, infos


def parallel_env(**kwargs) -> StepAgents:
    """PettingZoo's factory."""
    return StepAgents(**kwargs)
