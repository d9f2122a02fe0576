"""A tiny turn-based (AEC) PettingZoo game for tests: ``pettingzoo:tests.resign_game``.

Two players move in turn, ``player_0`` first; action 0 resigns (the mover earns -1, the other +1, the game
ends), action 1 plays on, and the game is truncated after ``max_moves`` moves (4; None: never). With
``resign=False`` action 0 plays on too (with ``max_moves=None``: a game that never ends). Half of the games
against a uniform random first player are over before ``player_1`` has moved. With ``factored=True`` a move is
``MultiDiscrete([2, 3])`` (resign or play on, then a choice that changes nothing) and the observations are
``{"observation", "action_mask"}`` dicts whose mask (sb3-contrib's 2 + 3 entries) allows a random part of
each; the game raises on a masked move.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces
from tests.aec_game import TwoPlayerGame


class ResignGame(TwoPlayerGame):
    """Players who may resign on any move, the first player's first included."""

    metadata = {"name": "resign_game_v0", "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, max_moves: int | None = 4, resign: bool = True,
                 factored: bool = False) -> None:
        self.max_moves, self.resign, self.factored = max_moves, resign, factored
        box = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.observation_spaces = {a: spaces.Dict({"observation": box, "action_mask": spaces.MultiBinary(5)})
                                   if factored else box for a in self.possible_agents}
        self.action_spaces = {a: spaces.MultiDiscrete([2, 3]) if factored else spaces.Discrete(2)
                              for a in self.possible_agents}
        self.rng = np.random.default_rng(0)
        self.render_mode = render_mode

    def observe(self, agent: str) -> np.ndarray | dict:  # noqa: D102
        obs = np.eye(2, dtype=np.float32)[self.moves % 2]
        return {"observation": obs, "action_mask": self.mask.copy()} if self.factored else obs

    def _draw_mask(self) -> None:
        """Each sub-action's allowed choices: a random nonempty part of them."""
        self.mask = (self.rng.random(5) < 0.5).astype(np.int8)
        self.mask[[int(self.rng.integers(0, 2)), 2 + int(self.rng.integers(0, 3))]] = 1

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:  # noqa: D102
        self._start_game()
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._draw_mask()

    def step(self, action: int | None) -> None:  # noqa: D102
        mover = self.agent_selection
        if self.terminations[mover] or self.truncations[mover]:
            self._was_dead_step(action)  # PettingZoo's rule: a player whose game is over steps with None
            return
        self._cumulative_rewards[mover] = 0.0
        self.moves += 1
        if self.factored:
            if not self.mask[np.asarray(action).reshape(-1) + [0, 2]].all():
                raise ValueError(f"move {action} is masked (mask {self.mask.tolist()})")
            action = int(np.asarray(action).reshape(-1)[0])
            self._draw_mask()
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
