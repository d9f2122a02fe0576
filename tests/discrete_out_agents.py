"""``pettingzoo:tests.discrete_out_agents``: two agents of different types whose observations are Discrete ones,
``a_0`` in Discrete(3) and ``b_0`` in Discrete(4, start=1); on the 3rd step ``b_0`` observes 9 (outside its space).
``late=True``: ``b_0`` joins on the 2nd step and observes nothing outside its space (until then its rows are
placeholders); ``same=True``: both observe in Discrete(4, start=1) (one shared policy can)."""
from __future__ import annotations

import functools

from gymnasium import spaces
from pettingzoo import ParallelEnv


class DiscreteOut(ParallelEnv):
    """Episodes of 8 steps; reward 0."""

    metadata = {"name": "discrete_out_v0"}

    def __init__(self, late: bool = False, same: bool = False) -> None:
        self.possible_agents = ["a_0", "b_0"]
        self.late, self.same = late, same

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Discrete:  # noqa: D102
        return spaces.Discrete(3) if agent == "a_0" and not self.same else spaces.Discrete(4, start=1)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Discrete:  # noqa: D102
        return spaces.Discrete(2) if agent == "a_0" and not self.same else spaces.Discrete(3)

    def _observe(self) -> dict:
        obs = {"a_0": self.t % 3 + self.same, "b_0": 9 if self.t == 3 and not self.late else 1 + self.t % 4}
        return {a: obs[a] for a in self.agents}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        self.agents, self.t = (["a_0"] if self.late else list(self.possible_agents)), 0
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        self.t += 1
        if self.t == 2:
            self.agents = list(self.possible_agents)
        obs = self._observe()
        done = self.t >= 8
        result = (obs, {a: 0.0 for a in self.agents}, {a: False for a in self.agents},
                  {a: done for a in self.agents}, {a: {} for a in self.agents})
        if done:
            self.agents = []
        return result


def parallel_env(**kwargs: object) -> DiscreteOut:
    """PettingZoo's factory convention."""
    return DiscreteOut(**kwargs)
