"""Atari training envs (wrapper path): a game that ends inside a reset (the no-op after a lost life, or the
FIRE and action 2 that follow) is still reported as a whole game."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs import make_vec_env  # noqa: E402


def _games(limit: int | None, steps: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Rows whose step ended a training episode, and (row, length) of each game the statistics recorded."""
    kwargs = {} if limit is None else {"max_episode_steps": limit}
    env = make_vec_env("ALE/Breakout-v5", 1, "sync", training=True, env_kwargs=kwargs)
    ends, games = [], []
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        for t in range(steps):
            step = env.step(rng.integers(0, 4, size=1))
            if step.terminated[0] or step.truncated[0]:
                ends.append(t)
            games += [(t, int(n)) for n in env.finished_lengths]
    finally:
        env.close()
    return ends, games


@pytest.mark.parametrize("inside", [1, 2, 3])  # the game ends on the no-op, the FIRE or the action 2 of the reset
def test_a_game_that_ends_inside_the_reset_after_a_lost_life_is_recorded(inside):
    # the game's score came in the info of a step that EpisodicLife / FireReset took inside reset(), which they
    # dropped: the game was never recorded, and its steps were added to the next game's length
    first_life = _games(None, 40)[0][0]  # the row of the first lost life
    game_steps = first_life + 1 + 2  # the game's steps then: the agent's and the reset's FIRE and action 2
    ends, games = _games(game_steps + inside, first_life + 3)
    assert ends[0] == first_life
    assert games == [(first_life + 1, first_life + 1)]  # recorded on the reset row, its steps the agent's
