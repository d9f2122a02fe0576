"""``pettingzoo:tests.int_seat_game``: :mod:`tests.resign_game` with its players named by the integers 0 and 1."""
from __future__ import annotations

from typing import Any

from tests.resign_game import ResignGame


class IntSeatGame(ResignGame):
    """ResignGame whose ``possible_agents`` are ``[0, 1]`` (PettingZoo does not require text names)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.possible_agents = [0, 1]
        self.observation_spaces = dict(enumerate(self.observation_spaces.values()))
        self.action_spaces = dict(enumerate(self.action_spaces.values()))

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:  # noqa: D102
        super().reset(seed=seed, options=options)
        self.agent_selection = 0


def env(**kwargs: Any) -> IntSeatGame:
    """PettingZoo's AEC factory."""
    return IntSeatGame(**kwargs)
