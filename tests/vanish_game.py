"""A tiny turn-based (AEC) PettingZoo game for tests that removes every player at once when it ends, with no
final "dead" step per player (PettingZoo allows it: ``agents`` simply empties): ``pettingzoo:tests.vanish_game``.

Two players move in turn, ``player_0`` first; action 0 resigns (the mover earns -1, the other +1), action 1
plays on; the game is truncated after ``max_moves`` moves (4), each earning ``tie`` (0.5) then.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from tests.aec_game import TwoPlayerGame


class VanishGame(TwoPlayerGame):
    """Players who all leave the game on the move that ends it."""

    metadata = {"name": "vanish_game_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, max_moves: int = 4, tie: float = 0.5) -> None:
        self.max_moves, self.tie = max_moves, tie
        self.observation_spaces = {a: spaces.Box(0.0, 1.0, (2,), np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(2) for a in self.possible_agents}
        self.render_mode = render_mode

    def observe(self, agent: str) -> np.ndarray:  # noqa: D102
        return np.eye(2, dtype=np.float32)[self.moves % 2]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:  # noqa: D102
        self._start_game()

    def step(self, action: int | None) -> None:  # noqa: D102
        mover = self.agent_selection
        self._cumulative_rewards[mover] = 0.0
        self.moves += 1
        if int(action) == 0:
            self.rewards = {a: -1.0 if a == mover else 1.0 for a in self.agents}
            self.terminations = {a: True for a in self.agents}
        elif self.moves >= self.max_moves:
            self.rewards = {a: self.tie for a in self.agents}
            self.truncations = {a: True for a in self.agents}
        else:
            self.rewards = {a: 0.0 for a in self.agents}
        self.agent_selection = self.agents[1 - self.agents.index(mover)]
        self._accumulate_rewards()
        if any(self.terminations.values()) or any(self.truncations.values()):
            self.agents = []  # everyone leaves at once: no step with None for each


def env(**kwargs: object) -> VanishGame:
    """PettingZoo's AEC factory."""
    return VanishGame(**kwargs)
