"""canter's two Atari paths (the gymnasium-wrapper stack and ale-py's native vector env) against each other, where
their behaviour is meant to be the same (``tests/test_reference_sb3_atari.py`` compares each with SB3)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs import make_vec_env  # noqa: E402

BREAKOUT = "ALE/Breakout-v5"
ASTERIX = "AsterixNoFrameskip-v4"  # 3 lives, no FIRE


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


def _after_first_lost_life(vectorization: str, boundary_action: int) -> np.ndarray:
    """Asterix (3 lives, no FIRE) training env: random actions until the first lost life, ``boundary_action`` on the
    step after it (NEXT_STEP's episode boundary), then NOOPs; the stacks from the boundary step on."""
    env = make_vec_env(ASTERIX, 1, vectorization, training=True)
    rng = np.random.default_rng(0)
    try:
        env.reset(seed=0)
        for _ in range(300):
            step = env.step(rng.integers(env.single_action_space.n, size=1))
            if step.terminated[0]:
                break
        assert step.terminated[0] and not step.truncated[0] and not len(env.finished_returns)  # a life, not the game
        frames = [env.step(np.array([boundary_action])).obs]
        frames += [env.step(np.zeros(1, dtype=np.int64)).obs for _ in range(4)]
    finally:
        env.close()
    return np.stack(frames)


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_the_step_after_a_lost_life_plays_noop_in_a_game_without_fire(vectorization):
    # the wrapper path's EpisodicLife reset (and SB3's EpisodicLifeEnv) plays NOOP there whatever the policy chose;
    # the native env played the policy's action (chosen on the previous life's last stack, and recorded by no
    # transition), which moved Asterix's player before the new episode's first frame: up to 228 pixels differed
    np.testing.assert_array_equal(_after_first_lost_life(vectorization, 2), _after_first_lost_life(vectorization, 0))


def _first_life(vectorization: str, limit: int | None) -> tuple[int, int, tuple[bool, bool], list[int]]:
    """Breakout training env, NOOPs (FIRE after each lost life): the step of the first lost life, the frames the
    game's time limit counts up to it, that step's (terminated, truncated) and the lengths of the games recorded."""
    kwargs = {} if limit is None else {"max_num_frames_per_episode": limit}
    env = make_vec_env(BREAKOUT, 1, vectorization, training=True, env_kwargs=kwargs)
    try:
        env.reset(seed=0)
        for t in range(100):
            step = env.step(np.zeros(1, dtype=np.int64))
            if step.terminated[0]:
                # ALE counts the frames since the game's reset, ale-py's native env those of the agent's steps
                frames = 4 * (t + 1) if vectorization == "native" else int(env.info["episode_frame_number"][0])
                return t, frames, (bool(step.terminated[0]), bool(step.truncated[0])), env.finished_lengths.tolist()
    finally:
        env.close()
    raise AssertionError("no life lost in 100 steps")


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_a_life_lost_on_the_step_that_reaches_the_frame_limit_ends_the_game(vectorization):
    # ale-py's native env reports only terminated there (its truncated excludes a terminal step) and resets the game
    # on the next step: the game was never recorded, and its score and steps went into the next game's
    t, frames, flags, _ = _first_life(vectorization, None)
    assert flags == (True, False)
    assert _first_life(vectorization, frames) == (t, frames, (True, True), [t + 1])
