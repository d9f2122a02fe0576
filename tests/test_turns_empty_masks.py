"""A random opponent facing a Discrete action mask that allows nothing moves uniformly, as the learner's
side treats such a row (canter.envs.masks.allowed_actions: unmasked); it was numpy's ValueError."""
from __future__ import annotations

import numpy as np
import pytest

from canter.envs.masks import allowed_actions
from canter.envs.turns import TurnBasedEnv

pytest.importorskip("pettingzoo")
GAME = "pettingzoo:tests.info_mask_game"


@pytest.mark.parametrize("where", ["obs", "info"])
def test_an_empty_discrete_mask_gives_a_uniform_opponent_move(where):
    env = TurnBasedEnv(GAME, {"seat": "player_0"}, training=True)
    env.reset(seed=0)
    empty = np.zeros(3, np.int8)
    obs, info = ({"observation": np.ones(2, np.float32), "action_mask": empty}, {}) if where == "obs" else (
        np.ones(2, np.float32), {"action_mask": empty})
    moves = {env._opponent_move("player_1", obs, info) for _ in range(60)}
    assert moves == {0, 1, 2}
    assert allowed_actions(empty[None])[0].all()  # the learner's side: every action allowed


def test_the_opponent_reads_a_mask_as_the_learner_does():
    """Entries count as allowed above 0.5 on both sides (the opponent took any nonzero entry)."""
    env = TurnBasedEnv(GAME, {"seat": "player_0"}, training=True)
    env.reset(seed=0)
    mask = np.array([0.2, 0.0, 1.0], np.float32)
    moves = {env._opponent_move("player_1", np.ones(2, np.float32), {"action_mask": mask}) for _ in range(40)}
    assert moves == {2} and allowed_actions(mask[None])[0].tolist() == [False, False, True]
