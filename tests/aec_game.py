"""What the tests' two-player turn-based (AEC) PettingZoo games share: the per-agent spaces and a fresh game's
bookkeeping (``tests.resign_game``, ``tests.info_mask_game``)."""
from __future__ import annotations

from gymnasium import spaces
from pettingzoo import AECEnv


class TwoPlayerGame(AECEnv):
    """Two players, ``player_0`` to move first, with per-agent spaces in ``observation_spaces`` / ``action_spaces``."""

    possible_agents = ["player_0", "player_1"]

    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return self.action_spaces[agent]

    def _start_game(self) -> None:
        """Every player in, nothing earned, nothing over, ``player_0`` to move."""
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.moves = 0
        self.agent_selection = "player_0"
