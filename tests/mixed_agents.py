"""A PettingZoo parallel env whose agents are of two types with different spaces: ``pettingzoo:mixed_agents``.

``speaker_0`` sees a one-hot target among 3 (``Box(3)``, ``Discrete(3)``) and earns 1 for naming
it; each of ``n_listeners`` listeners sees a one-hot cue among 4 (``Box(4)``, ``Discrete(2)``) and
earns 1 for answering the cue's parity. An episode lasts 8 steps (truncation), so each agent can
earn 8; uniform random play earns 8/3 (speaker) and 4 (listeners). One shared policy cannot act
for both types; one policy per type (``policies: type``) can.
"""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

LENGTH = 8


class MixedAgents(ParallelEnv):
    """A speaker and listeners, each rewarded for reading its own observation."""

    metadata = {"name": "mixed_agents_v0"}

    def __init__(self, n_listeners: int = 2) -> None:
        self.possible_agents = ["speaker_0", *(f"listener_{i}" for i in range(n_listeners))]
        self.rng = np.random.default_rng()

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Box:  # noqa: D102
        return spaces.Box(0.0, 1.0, (3 if agent.startswith("speaker") else 4,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Discrete:  # noqa: D102
        return spaces.Discrete(3 if agent.startswith("speaker") else 2)

    def _draw(self) -> None:
        self.cues = {a: int(self.rng.integers(0, self.observation_space(a).shape[0])) for a in self.agents}

    def _observe(self) -> dict:
        return {a: np.eye(self.observation_space(a).shape[0], dtype=np.float32)[c] for a, c in self.cues.items()}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self._draw()
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        rewards = {a: float(actions[a] == (c if a.startswith("speaker") else c % 2)) for a, c in self.cues.items()}
        self.t += 1
        self._draw()
        obs = self._observe()
        trunc = {a: self.t >= LENGTH for a in self.agents}
        term = {a: False for a in self.agents}
        infos = {a: {} for a in self.agents}
        if self.t >= LENGTH:
            self.agents = []
        return obs, rewards, term, trunc, infos


def parallel_env(**kwargs: object) -> MixedAgents:
    """PettingZoo's factory convention."""
    return MixedAgents(**kwargs)
