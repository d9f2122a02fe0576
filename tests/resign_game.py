"""A tiny turn-based (AEC) PettingZoo game for tests: ``pettingzoo:tests.resign_game``.

Two players move in turn, ``player_0`` first; action 0 resigns (the mover earns -1, the other +1, the game
ends), action 1 plays on, and the game is truncated after ``max_moves`` moves (4; None: never). With
``resign=False`` action 0 plays on too (with ``max_moves=None``: a game that never ends). Half of the games
against a uniform random first player are over before ``player_1`` has moved.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv


class ResignGame(AECEnv):
    """Players who may resign on any move, the first player's first included."""

    metadata = {"name": "resign_game_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, max_moves: int | None = 4, resign: bool = True) -> None:
        self.max_moves, self.resign = max_moves, resign
        self.possible_agents = ["player_0", "player_1"]
        self.observation_spaces = {a: spaces.Box(0.0, 1.0, (2,), np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(2) for a in self.possible_agents}
        self.render_mode = render_mode

    def observation_space(self, agent: str) -> spaces.Box:  # noqa: D102
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:  # noqa: D102
        return self.action_spaces[agent]

    def observe(self, agent: str) -> np.ndarray:  # noqa: D102
        return np.eye(2, dtype=np.float32)[self.moves % 2]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:  # noqa: D102
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.moves = 0
        self.agent_selection = "player_0"

    def step(self, action: int | None) -> None:  # noqa: D102
        mover = self.agent_selection
        if self.terminations[mover] or self.truncations[mover]:
            self._was_dead_step(action)  # PettingZoo's rule: a player whose game is over steps with None
            return
        self._cumulative_rewards[mover] = 0.0
        self.moves += 1
        if int(action) == 0 and self.resign:
            self.rewards = {a: -1.0 if a == mover else 1.0 for a in self.agents}
            self.terminations = {a: True for a in self.agents}
        else:
            self.rewards = {a: 0.0 for a in self.agents}
            self.truncations = {a: self.max_moves is not None and self.moves >= self.max_moves for a in self.agents}
        self.agent_selection = self.agents[1 - self.agents.index(mover)]
        self._accumulate_rewards()


def env(**kwargs: object) -> ResignGame:
    """PettingZoo's AEC factory."""
    return ResignGame(**kwargs)
