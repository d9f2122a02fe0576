"""canter's two Atari paths (the gymnasium-wrapper stack and ale-py's native vector env) against each other, where
their behaviour is meant to be the same (``tests/test_reference_sb3_atari.py`` compares each with SB3)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs import make_vec_env  # noqa: E402

BREAKOUT = "ALE/Breakout-v5"


def _play(env, seed: int, actions: list[int]) -> list[np.ndarray]:
    """The observations of a ``reset(seed=seed)`` and the steps of ``actions`` after it."""
    frames = [env.reset(seed=seed)]
    for action in actions:
        frames.append(env.step(np.array([action])).obs)
    return frames


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_a_seeded_reset_of_a_used_training_env_starts_the_seeds_game(vectorization):
    # the wrapper path's training env (EpisodicLife) answered a reset(seed=...) in the middle of a game with a no-op
    # step of the same game: the seed was dropped (a resumed run's "fresh episodes with a new seed" went on with the
    # first reset's game), where the native env (and every evaluation env) starts the seed's game
    actions = [1, 3, 3, 2, 0, 2, 3, 1] * 2
    env = make_vec_env(BREAKOUT, 1, vectorization, training=True)
    try:
        want = _play(env, 2, actions)
        _play(env, 1, [3] * 10)  # another game going on, no life lost
        got = _play(env, 2, actions)
    finally:
        env.close()
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {i} after the seeded reset")
