"""Turn-based games whose players are named by integers: a seat given as a number or as text picks one."""
from __future__ import annotations

import pytest

from canter.envs.turns import TurnBasedEnv
from canter.errors import CanterError

pytest.importorskip("pettingzoo")
GAME = "pettingzoo:tests.int_seat_game"


@pytest.mark.parametrize("seat", [1, "1"])
def test_a_seat_of_a_game_whose_players_are_integers(seat):
    """env_kwargs seat was turned into text and compared with the game's players, so a game whose
    possible_agents are integers refused every seat with a TypeError traceback (sorting its names for the
    error). The seat given as 1 (YAML) or '1' (--seat) is player 1."""
    env = TurnBasedEnv(GAME, {"seat": seat})
    obs, info = env.reset(seed=0)
    assert env.learner == 1 and info["seat"] == 1
    env.close()


def test_an_unknown_seat_of_such_a_game_is_one_line():
    """A seat no player has is refused naming the players (it was a TypeError too)."""
    with pytest.raises(CanterError, match="unknown seat '2'; choices: 0, 1, random"):
        TurnBasedEnv(GAME, {"seat": 2})
