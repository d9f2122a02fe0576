"""Atari envs: what env_kwargs mean on the wrapper path (max_episode_steps counts agent steps; render_mode)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs import make_env, make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402


@pytest.mark.parametrize("vectorization", ["auto", "sync"])
@pytest.mark.parametrize("training", [False, True])
def test_max_episode_steps_counts_agent_steps_not_emulator_frames(vectorization, training):
    # gymnasium's TimeLimit was put around the raw frameskip-1 game: max_episode_steps 40 cut a Pong game
    # after 40 emulator frames less the reset's no-ops, i.e. 2 to 10 agent steps. It counts the game's agent
    # steps now, the two that Pong's reset takes itself (FIRE, then action 2) included
    env = make_vec_env("ALE/Pong-v5", 1, vectorization, training=training, env_kwargs={"max_episode_steps": 40})
    try:
        env.reset(seed=0)
        for t in range(60):
            step = env.step(np.zeros(1, dtype=np.int64))
            if step.terminated[0] or step.truncated[0]:
                break
        assert step.truncated[0] and not step.terminated[0] and t + 1 == 40 - 2
        assert env.finished_lengths.tolist() == [40 - 2]
    finally:
        env.close()


def test_max_episode_steps_of_a_single_atari_env_counts_agent_steps():
    env = make_env("ALE/Pong-v5", max_episode_steps=2e1)  # canter play, --record-every; 2e1: YAML's float
    try:
        env.reset(seed=0)
        for t in range(40):
            if any(env.step(0)[2:4]):
                break
        assert t + 1 == 20 - 2  # FIRE and action 2 at the reset count
    finally:
        env.close()


@pytest.mark.parametrize("limit", [0, 2.5, "10"])
def test_a_bad_atari_max_episode_steps_is_a_one_line_error(limit):
    with pytest.raises(CanterError, match="max_episode_steps must be a whole number >= 1"):
        make_vec_env("ALE/Pong-v5", 1, "sync", env_kwargs={"max_episode_steps": limit})


def test_a_render_mode_in_env_kwargs_is_taken_as_other_envs_take_it():
    # it reached gymnasium.make twice: "make() got multiple values for keyword argument 'render_mode'"
    env = make_vec_env("ALE/Pong-v5", 1, "sync", training=True, env_kwargs={"render_mode": "rgb_array"})
    try:
        env.reset(seed=0)
        assert env.env.envs[0].render().shape == (210, 160, 3)
    finally:
        env.close()
    single = make_env("ALE/Pong-v5", render_mode="rgb_array")  # canter play's own mode (it drops env_kwargs')
    assert single.render_mode == "rgb_array"
    single.close()


@pytest.mark.filterwarnings("ignore:learning_starts")  # a run that only saves a checkpoint
def test_canter_eval_of_a_native_run_takes_env_kwargs_only_the_wrapper_path_takes(tmp_path, capsys):
    # canter eval used the run's own vectorization, native, which refuses mode: "use --vectorization auto, sync
    # or async", a flag that canter eval does not have
    import canter
    from support import run_cli

    run = tmp_path / "pong"
    canter.train("dqn", "ALE/Pong-v5", run_dir=run, vectorization="native", n_envs=1, max_steps=8, learning_starts=100,
                 buffer_size=200, eval_episodes=1, eval_envs=1, eval_every=0,
                 env_kwargs={"max_num_frames_per_episode": 100})
    code, out, err = run_cli(capsys, "eval", str(run), "--episodes", "1", "--env-kwargs", "{mode: 1}")
    assert code == 0 and out.startswith("ALE/Pong-v5: mean return"), err
