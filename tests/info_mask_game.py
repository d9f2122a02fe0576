"""A tiny turn-based (AEC) PettingZoo game whose action masks are in ``info``: ``pettingzoo:tests.info_mask_game``.

PettingZoo's AEC API lets a game report the mover's legal moves as ``info["action_mask"]`` (from ``last()``)
rather than in a ``{"observation", "action_mask"}`` observation. Two players move in turn, ``moves`` moves
each (4); a move is ``Discrete(3)`` and earns the mover ``action / 2``, so the best move is the highest
allowed one. Each turn's mask allows a random nonempty part of the moves, and the observation (a constant)
says nothing about it: only the mask does. The game raises on a masked move.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from tests.aec_game import TwoPlayerGame


class InfoMaskGame(TwoPlayerGame):
    """Two players who pick one of three moves, each turn among those ``info["action_mask"]`` allows."""

    metadata = {"name": "info_mask_game_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, moves: int = 4) -> None:
        self.moves_each = moves
        self.observation_spaces = {a: spaces.Box(0.0, 1.0, (2,), np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(3) for a in self.possible_agents}
        self.rng = np.random.default_rng(0)
        self.render_mode = render_mode

    def observe(self, agent: str) -> np.ndarray:  # noqa: D102
        return np.ones(2, np.float32)

    def _draw_mask(self, agent: str) -> None:
        mask = (self.rng.random(3) < 0.5).astype(np.int8)
        mask[int(self.rng.integers(0, 3))] = 1
        self.infos[agent] = {"action_mask": mask}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:  # noqa: D102
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._start_game()
        self._draw_mask(self.agent_selection)

    def step(self, action: int | None) -> None:  # noqa: D102
        mover = self.agent_selection
        if self.terminations[mover] or self.truncations[mover]:
            self._was_dead_step(action)
            return
        if not self.infos[mover]["action_mask"][int(action)]:
            raise ValueError(f"move {action} is masked (mask {self.infos[mover]['action_mask'].tolist()})")
        self._cumulative_rewards[mover] = 0.0
        self.moves += 1
        self.rewards = {a: int(action) / 2 if a == mover else 0.0 for a in self.agents}
        done = self.moves >= 2 * self.moves_each
        self.truncations = {a: done for a in self.agents}
        self.agent_selection = self.agents[1 - self.agents.index(mover)]
        self._draw_mask(self.agent_selection)
        self._accumulate_rewards()


def env(**kwargs: object) -> InfoMaskGame:
    """PettingZoo's AEC factory."""
    return InfoMaskGame(**kwargs)
