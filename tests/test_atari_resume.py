"""Exact resume of Atari games on the wrapper path: the emulator's state is saved with the env's."""
import json

import numpy as np
import pytest

from canter.envs import make_vec_env
from canter.envs.state import capture_env, restore_env

pytest.importorskip("ale_py")


def _played(env_kwargs: dict, steps: int) -> tuple:
    env = make_vec_env("BreakoutNoFrameskip-v4", 1, "sync", training=True, env_kwargs=env_kwargs)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(rng.integers(0, 4, 1))
    return env, rng


def _assert_restored_plays_on(env_kwargs: dict) -> None:
    saved, rng = _played(env_kwargs, 120)
    state, problems = capture_env(saved)
    assert problems == []
    restored = make_vec_env("BreakoutNoFrameskip-v4", 1, "sync", training=True, env_kwargs=env_kwargs)
    restored.reset(seed=99)  # another game: everything must come from the state
    restore_env(restored, state)
    ends = 0
    for action in rng.integers(0, 4, (300, 1)):
        a, b = saved.step(action), restored.step(action)
        for field in ("obs", "reward", "terminated", "truncated", "valid"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
        assert np.array_equal(saved.finished_returns, restored.finished_returns)
        ends += int(a.terminated[0])
    assert ends >= 2  # lost lives (the episodic-life resets) were replayed too
    saved.close()
    restored.close()


def test_a_restored_game_plays_on_exactly_as_the_saved_one():
    # capture_env listed the ALE interface (and FrameStackObservation's deque) as opaque: every Atari resume
    # started fresh games with a new seed (resume_exact false), also on the wrapper path that can be saved
    _assert_restored_plays_on({})


def test_a_restored_game_with_sticky_actions_plays_on_exactly():
    # ALE's own sticky actions repeat the previous action from inside the emulator, which cloneState leaves out
    # (a restored game's next frame differed, so such runs resumed with fresh games): the wrapper path draws
    # them in Python (StickyActions), whose held action and generator are saved with the env
    _assert_restored_plays_on({"repeat_action_probability": 0.25})


def test_sticky_actions_repeat_about_the_asked_share_of_frames():
    from canter.envs.atari_sticky import StickyActions

    env, _ = _played({"repeat_action_probability": 0.25}, 0)
    sticky = env.env.envs[0]
    while not isinstance(sticky, StickyActions):
        sticky = sticky.env
    assert sticky.unwrapped.ale.getFloat("repeat_action_probability") == 0.0  # not ALE's, which cannot be saved
    sticky.reset(seed=1)
    other = 0
    for action in [1, 2] * 2000:
        sticky.step(action)
        other += sticky.held != action
    env.close()
    # alternating actions: the held one is the other action after an odd run of repeats, p / (1 + p) = 0.2 of frames
    assert 0.18 < other / 4000 < 0.22


@pytest.mark.slow
@pytest.mark.parametrize("env_kwargs", [[], ["--set", "env_kwargs={repeat_action_probability: 0.25}"]])
def test_a_resumed_dqn_atari_run_is_the_uninterrupted_one(tmp_path, env_kwargs):
    from canter.cli import main

    common = [*env_kwargs, "--env", "BreakoutNoFrameskip-v4", "--n-envs", "2", "--vectorization", "sync", "--set",
              "buffer_size=101", "--set", "learning_starts=50", "--set", "exploration_final_eps=0.5", "--set",
              "exploration_initial_eps=0.5", "--eval-episodes", "0", "--quiet"]
    assert main(["train", "dqn", *common, "--max-steps", "300", "--run-dir", str(tmp_path / "a")]) == 0
    assert main(["train", "--resume", str(tmp_path / "a"), "--max-steps", "600", "--quiet"]) == 0
    assert main(["train", "dqn", *common, "--max-steps", "600", "--run-dir", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["resume_exact"] is True
    from safetensors.numpy import load_file

    a, b = (load_file(str(tmp_path / r / "checkpoints" / "last.safetensors")) for r in "ab")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_native_atari_run_is_told_why_its_resume_is_not_exact():
    """ale-py's native vector env cannot save its games: the resume warning says so and names the path that can,
    where it named an attribute path (``VecEnv.env.env.env.env.env.ale (ALEVectorInterface)``)."""
    env = make_vec_env("BreakoutNoFrameskip-v4", 1, "native", training=True)
    state, problems = capture_env(env)
    env.close()
    assert len(problems) == 1, problems
    assert "native Atari vector env" in problems[0] and "cannot save its games" in problems[0]
    assert "--vectorization sync" in problems[0]


def test_an_async_atari_run_is_told_why_its_resume_is_not_exact():
    """``auto`` with a key the native env does not take (``mode``) runs more than one copy in subprocesses, which
    cannot be saved: the resume warning says so and names ``sync``, where it named the workers' pipes and locks
    (``VecEnv.env.env.parent_pipes (list), ...``)."""
    env = make_vec_env("BreakoutNoFrameskip-v4", 2, "auto", training=True, env_kwargs={"mode": 0})
    state, problems = capture_env(env)
    env.close()
    assert len(problems) == 1, problems
    assert "subprocesses" in problems[0] and "--vectorization sync" in problems[0]
