"""The Atari preprocessing's settings in ``env_kwargs`` (Stable-Baselines3's ``AtariWrapper`` / ``VecFrameStack``
names: ``noop_max``, ``frame_skip``, ``screen_size``, ``frame_stack`` or ``n_stack``, ``clip_reward``) on both paths,
and everything downstream of them: the spaces, the frame-once replay buffer, the CNN, resume, eval and play. They
were refused in one line ("canter's Atari preprocessing is fixed")."""
from __future__ import annotations


import numpy as np
import pytest
import torch

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter import CanterError  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from support import (  # noqa: E402
    assert_one_line_error, assert_resumed_atari_dqn_is_uninterrupted, atari_dqn_argv, filled_frame_replays,
    native_atari_run_reaches_eval_and_play, run_cli)

GAME = "BreakoutNoFrameskip-v4"
PATHS = ["native", "sync"]


@pytest.mark.parametrize("vectorization", PATHS)
@pytest.mark.parametrize("kwargs,shape", [
    ({"frame_stack": 2, "screen_size": 64}, (2, 64, 64)),
    ({"n_stack": 3, "screen_size": [60, 48]}, (3, 60, 48)),  # SB3's VecFrameStack name; [height, width]
    ({"frame_stack": 1}, (1, 84, 84)),
])
def test_the_observation_space_follows_frame_stack_and_screen_size(vectorization, kwargs, shape):
    env = make_vec_env(GAME, 2, vectorization, training=True, env_kwargs=kwargs)
    obs = env.reset(seed=0)
    step = env.step(np.zeros(2, dtype=np.int64))
    env.close()
    assert env.single_observation_space.shape == shape and obs.shape == step.obs.shape == (2, *shape)
    assert obs.dtype == np.uint8


@pytest.mark.parametrize("vectorization", PATHS)
def test_frame_skip_is_the_emulator_frames_per_step(vectorization):
    from canter.envs.atari import make_atari_vec

    env = make_atari_vec(GAME, 1, vectorization, env_kwargs={"frame_skip": 3})
    env.reset(seed=0)
    frames = [int(env.step(np.zeros(1, dtype=np.int64))[4]["episode_frame_number"][0]) for _ in range(3)]
    env.close()
    assert np.diff(frames).tolist() == [3, 3]


@pytest.mark.parametrize("vectorization", PATHS)
def test_noop_max_0_starts_every_game_alike(vectorization):
    from canter.envs.atari import make_atari_vec

    started = {}  # the emulator frames a reset played, over 2 seeds: the random no-ops are what varies
    for noop_max in (0, 30):
        env = make_atari_vec(GAME, 2, vectorization, env_kwargs={"noop_max": noop_max})
        started[noop_max] = set(env.reset(seed=0)[1]["episode_frame_number"].tolist())
        env.close()
    assert len(started[0]) == 1 and len(started[30]) > 1, started


@pytest.mark.parametrize("vectorization", PATHS)
@pytest.mark.parametrize("clip", [True, False])
def test_clip_reward_false_trains_on_the_raw_score(vectorization, clip):
    # SpaceInvaders' aliens are worth 5 to 30 points: clipped, every reward is 0 or 1
    env = make_vec_env("SpaceInvadersNoFrameskip-v4", 2, vectorization, training=True, env_kwargs={"clip_reward": clip})
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    rewards = np.concatenate([env.step(rng.integers(0, 6, 2)).reward for _ in range(250)])
    env.close()
    assert rewards.max() > 0
    assert (set(np.unique(rewards)) <= {0.0, 1.0}) == clip


@pytest.mark.parametrize("vectorization,kwargs,message", [
    ("native", {"frame_stack": 0}, "env_kwargs frame_stack must be a whole number >= 1, got 0"),
    ("sync", {"screen_size": [84]}, "env_kwargs screen_size must be a whole number >= 8 (square frames) or "
                                     "[height, width] of two, got [84]"),
    ("sync", {"screen_size": 4}, "screen_size must be a whole number >= 8"),
    ("native", {"noop_max": -1}, "env_kwargs noop_max must be a whole number >= 0, got -1"),
    ("sync", {"frame_skip": "4"}, "env_kwargs frame_skip must be a whole number >= 1, got '4'"),
    ("native", {"frame_skip": 0}, "frame_skip must be a whole number >= 1, got 0"),
    ("sync", {"clip_reward": "yes"}, "env_kwargs clip_reward must be true or false, got 'yes'"),
    ("native", {"n_stack": 2, "frame_stack": 2}, "env_kwargs 'n_stack' and 'frame_stack' are the same setting"),
    ("sync", {"frameskip": 4}, "env_kwargs frameskip is the raw game's, which the preprocessing needs at 1; set "
                               "frame_skip"),
])
def test_bad_settings_are_one_line_errors_naming_the_key(vectorization, kwargs, message):
    with pytest.raises(CanterError) as err:
        make_vec_env(GAME, 2, vectorization, training=True, env_kwargs=kwargs)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_the_cli_refuses_a_bad_setting_in_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "dqn", "--env", GAME, "--env-kwargs", "{frame_stack: 0}", "--max-steps",
                           "8", "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "frame_stack must be a whole number >= 1, got 0")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("vectorization,kwargs", [
    ("native", {"frame_stack": 3, "screen_size": [60, 48]}),  # zero padding, lost lives (NativeNewLifeStack)
    ("sync", {"frame_stack": 2, "screen_size": 64}),  # first-frame padding
    ("sync", {"frame_stack": 1, "screen_size": 40}),
])
def test_frame_once_replay_gives_the_plain_buffer_s_stacks(vectorization, kwargs):
    lean, full, shape, ends = filled_frame_replays(GAME, 2, vectorization, 90, 180, kwargs)  # 180 steps wrap it
    assert ends >= 2
    idx = lean.sample_indices(500)
    a, b = lean.transitions(idx), full.transitions(idx)
    assert torch.equal(a.obs, b.obs) and torch.equal(a.next_obs, b.next_obs)
    assert lean.obs.shape[2:] == shape[1:]  # one frame a row
    if shape[0] > 1:
        assert (lean.hist < shape[0] - 1).any()  # episode starts rebuilt without earlier frames


def _dqn_argv(vectorization: str, run_dir, steps: int) -> list[str]:
    return atari_dqn_argv(GAME, "{frame_stack: 2, screen_size: 64}", vectorization, run_dir, steps)


@pytest.mark.slow  # three short runs: 2-6 s
def test_a_frame_stack_2_screen_64_dqn_run_trains_and_resumes_exactly(tmp_path):
    a = assert_resumed_atari_dqn_is_uninterrupted(tmp_path, GAME, "{frame_stack: 2, screen_size: 64}")
    assert a["agent.algorithm.modules.q.encoder.net.0.weight"].shape[1] == 2  # the Nature CNN's input channels
    assert a["trainer.buffer.obs"].shape[1:] == (2, 64, 64)  # rows x envs x one 64x64 frame
    assert a["agent.algorithm.modules.q.q.0.weight"].shape == (32, 1024)  # 64 conv channels x 4 x 4 at 64x64


@pytest.mark.slow  # a short run, an evaluation and a game played: 2-5 s
def test_a_native_run_s_settings_reach_eval_and_play(tmp_path, capsys):
    run = tmp_path / "run"
    native_atari_run_reaches_eval_and_play(capsys, run, _dqn_argv("native", run, 20))
    code, _, err = run_cli(capsys, "eval", str(run), "--episodes", "1", "--env-kwargs", "{frame_stack: 3}")
    assert_one_line_error(code, err, "spaces")  # another stack is another observation space


@pytest.mark.parametrize("vectorization", PATHS)
def test_ppo_on_single_32x32_frames_stores_uint8_and_picks_the_encoder_for_them(vectorization):
    import canter
    from canter.models.cnn import ImpalaResNet

    kwargs = {"frame_stack": 1, "screen_size": 32}  # below the Nature CNN's 36 pixels: auto picks IMPALA's ResNet
    trainer = canter.make_trainer("ppo", GAME, run_dir=None, vectorization=vectorization, env_kwargs=kwargs,
                                  max_steps=32, n_envs=2, n_steps=16, batch_size=16, n_epochs=1, eval_episodes=0)
    records = list(trainer())
    assert records and trainer.step == 32  # one rollout of 2 x 16 steps, one update
    agent = trainer.agent
    encoder = agent.algorithm.model.encoder
    assert isinstance(encoder, ImpalaResNet) and encoder.in_shape == (1, 32, 32)
    assert trainer.buffer.obs.dtype == torch.uint8 and tuple(trainer.buffer.obs.shape[2:]) == (1, 32, 32)


def test_the_wrapper_path_s_video_fps_follows_frame_skip():
    from canter.play import make_render_env

    env = make_render_env(GAME, "rgb_array", vectorization="sync", env_kwargs={"frame_skip": 3})
    fps, frame = env.metadata["render_fps"], env.render()
    env.close()
    assert fps == 20 and frame.shape == (210, 160, 3)  # 60 emulator frames a second, 3 a step
