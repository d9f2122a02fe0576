"""A turn-based (AEC) game that removes every player at once when it ends (``tests.vanish_game``): the learner's
last transition got reward 0.0 and lost the game's win or loss (and a truncated game read as terminated)."""
from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from canter.envs.turns import TurnBasedEnv  # noqa: E402

GAME = "pettingzoo:tests.vanish_game"


def test_the_learners_own_resignation_is_its_loss():
    env = TurnBasedEnv(GAME, {"seat": "player_0"})
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step(0)
    assert (reward, terminated, truncated) == (-1.0, True, False)


def test_the_opponents_resignation_is_the_learners_win():
    env = TurnBasedEnv(GAME, {"seat": "player_0"})
    for seed in range(20):  # the random opponent resigns on its first move in about half of the games
        env.reset(seed=seed)
        _, reward, terminated, _, _ = env.step(1)
        if terminated:
            assert reward == 1.0
            return
    pytest.fail("the opponent never resigned")


def test_a_game_truncated_by_removing_everyone_is_truncated_with_its_reward():
    env = TurnBasedEnv(GAME, {"seat": "player_1", "max_moves": 2})
    for seed in range(20):
        _, info = env.reset(seed=seed)  # player_0 played on (else the game is replayed)
        _, reward, terminated, truncated, _ = env.step(1)  # move 2: the game is cut, each earns the tie
        assert (reward, terminated, truncated) == (0.5, False, True)
