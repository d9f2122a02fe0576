"""RGB Atari frames, ``env_kwargs: {grayscale: false}``, on both Atari paths and everything downstream: the frames
stacked as channels (``uint8 [3 * frame_stack, H, W]``), the two paths' frames equal, the frame-once replay buffer,
the convolutional encoder's input channels, training, evaluation, play and resume. They were refused in one line
("RGB frames are not supported")."""
from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest
import torch

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter import CanterError  # noqa: E402
from canter.cli import main  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from support import (  # noqa: E402
    assert_one_line_error, assert_resumed_atari_dqn_is_uninterrupted, atari_dqn_argv, filled_frame_replays,
    native_atari_run_reaches_eval_and_play, run_cli)

PONG = "ALE/Pong-v5"
PATHS = ["native", "sync"]
RGB = {"grayscale": False}


@pytest.mark.parametrize("vectorization", PATHS)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("kwargs,shape", [({}, (12, 84, 84)), ({"frame_stack": 2, "screen_size": [60, 48]}, (6, 60, 48))])
def test_rgb_frames_are_stacked_as_channels(vectorization, training, kwargs, shape):
    env = make_vec_env(PONG, 2, vectorization, training=training, env_kwargs={**RGB, **kwargs})
    obs = env.reset(seed=0)
    step = env.step(np.zeros(2, dtype=np.int64))
    env.close()
    space = env.single_observation_space
    assert space.shape == shape and space.dtype == np.uint8 and obs.shape == step.obs.shape == (2, *shape)
    assert obs.dtype == step.obs.dtype == np.uint8
    newest = step.obs[:, -3:].astype(int)  # the newest frame's red, green and blue planes: colours, not grey
    assert (newest[:, 0] != newest[:, 1]).any() and (newest[:, 1] != newest[:, 2]).any()
    # frame-major channels (3 * frame + colour): the padding of a fresh stack is whole frames
    if vectorization == "native":  # zero frames, as SB3's VecFrameStack pads
        assert not obs[:, :-3].any() and obs[:, -3:].any()
    else:  # gymnasium's FrameStackObservation repeats the first frame
        assert all(np.array_equal(obs[:, 3 * i:3 * i + 3], obs[:, -3:]) for i in range(shape[0] // 3))


def _played(vectorization: str, grayscale: bool, steps: int) -> np.ndarray:
    env = make_vec_env("AsterixNoFrameskip-v4", 1, vectorization, env_kwargs={"grayscale": grayscale, "noop_max": 0})
    stacks, rng = [env.reset(seed=0)], np.random.default_rng(0)
    stacks += [env.step(rng.integers(0, 9, 1)).obs for _ in range(steps)]
    env.close()
    return np.stack(stacks)[:, 0]


@pytest.mark.parametrize("grayscale", [False, True])
def test_the_two_paths_give_the_same_frames(grayscale):
    """Asterix has no FIRE, and without no-ops (``noop_max: 0``) both paths' resets play the same frames, so every
    frame is equal, bitwise (ale-py resizes with OpenCV's INTER_AREA, as gymnasium's wrapper does, and both max-pool
    the RGB frames); only the padding of the first stacks differs (native: zeros, wrappers: the first frame)."""
    native, wrapped = _played("native", grayscale, 30), _played("sync", grayscale, 30)
    c = 1 if grayscale else 3
    assert native.shape == wrapped.shape == (31, 4 * c, 84, 84)
    assert all(np.array_equal(a[-c:], b[-c:]) for a, b in zip(native, wrapped))  # the newest frame of every stack
    assert np.array_equal(native[3:], wrapped[3:])  # whole stacks once the padding is gone
    assert len({native[t, -c:].tobytes() for t in range(31)}) > 10  # the game moves: the test can see a difference


def test_bad_grayscale_values_are_one_line_errors():
    with pytest.raises(CanterError, match="env_kwargs grayscale must be true or false, got 'no'"):
        make_vec_env(PONG, 1, "sync", env_kwargs={"grayscale": "no"})


@pytest.mark.parametrize("vectorization", PATHS)
def test_frame_once_replay_stores_each_rgb_frame_once(vectorization, tmp_path):
    from canter.data.framestack import FrameStackReplay

    n, capacity = 2, 60
    lean, full, shape, ends = filled_frame_replays("BreakoutNoFrameskip-v4", n, vectorization, capacity, 60, RGB)
    assert shape == (12, 84, 84) and ends >= 2  # 60 steps wrap the ring (31 rows an env); lost lives start episodes
    idx = lean.sample_indices(200)
    a, b = lean.transitions(idx), full.transitions(idx)
    assert torch.equal(a.obs, b.obs) and torch.equal(a.next_obs, b.next_obs)
    assert lean.obs.shape[2:] == (3, 84, 84) and (lean.hist < 3).any()  # one RGB frame a row; episode starts
    assert lean.obs.nbytes == lean.length * n * 3 * 84 * 84  # the frames: one RGB frame a row
    assert full.nbytes() > 3.5 * lean.nbytes()  # 4 frames a row; the lean buffer also holds its head stacks
    restored = FrameStackReplay(capacity, shape, (), np.uint8, np.int64, n_envs=n, seed=1, frame_channels=3)
    restored.load(lean.save(tmp_path / "replay.npz"))
    assert torch.equal(restored.transitions(idx).obs, a.obs)
    grey = FrameStackReplay(capacity, shape, (), np.uint8, np.int64, n_envs=n, seed=1)  # 12 grey frames a stack
    with pytest.raises(CanterError, match="frame_channels mismatch: saved 3 channels a frame, this buffer 1"):
        grey.load(tmp_path / "replay.npz")


def test_an_rgb_frame_once_buffer_is_within_10_percent_of_its_frames():
    from canter.data.framestack import FrameStackReplay, bytes_per_transition

    lean = FrameStackReplay(5_000, (12, 84, 84), (), np.uint8, np.int64, n_envs=1, frame_channels=3)
    frame = 3 * 84 * 84
    assert frame <= bytes_per_transition(lean) <= 1.1 * frame  # measured 21,206 bytes: 1.0018x the frame


@pytest.mark.slow  # a tiny run on Pong (DQN 300 steps, PPO 256), evaluated: 11-33 s on a busy 2-core host
@pytest.mark.parametrize("algo,overrides", [
    ("dqn", dict(max_steps=300, learning_starts=100, buffer_size=1000, batch_size=32)),
    ("ppo", dict(max_steps=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1)),
])
def test_dqn_and_ppo_train_and_evaluate_on_rgb_frames(tmp_path, algo, overrides):
    import pyarrow.parquet as pq

    import canter

    run_dir = tmp_path / algo
    canter.train(algo, PONG, run_dir=run_dir, eval_episodes=1, eval_envs=1, eval_every=0, env_kwargs=RGB,
                 eval_env_kwargs={"max_num_frames_per_episode": 2000}, **overrides)  # a short game evaluated
    losses = pq.read_table(run_dir / "updates.parquet").column("loss" if algo == "dqn" else "value_loss").to_pylist()
    assert losses and all(math.isfinite(x) for x in losses)
    score = pq.read_table(run_dir / "evaluations.parquet").column("mean_return").to_pylist()[-1]
    assert -21 <= score <= 21 and score == int(score)  # a whole (if cut short) Pong game
    agent = canter.load(run_dir)
    modules = agent.algorithm.modules()
    encoder = (modules["q"] if algo == "dqn" else agent.algorithm.model).encoder
    assert encoder.in_shape == (12, 84, 84)  # the Nature CNN's input channels: 4 frames x 3 colours
    env = make_vec_env(PONG, 1, "native", env_kwargs=RGB)
    actions = agent.predict(env.reset(seed=0))
    env.close()
    assert actions.shape == (1,) and 0 <= actions[0] < 6


_RGB = "{grayscale: false, frame_stack: 2, screen_size: 64}"


def _dqn_argv(vectorization: str, run_dir, steps: int) -> list[str]:
    return atari_dqn_argv("BreakoutNoFrameskip-v4", _RGB, vectorization, run_dir, steps)


@pytest.mark.slow  # three short runs and a dataset of the replay buffer: ~9 s
def test_an_rgb_dqn_run_resumes_exactly_with_its_frames_stored_once(tmp_path):
    a = assert_resumed_atari_dqn_is_uninterrupted(tmp_path, "BreakoutNoFrameskip-v4", _RGB)
    assert a["agent.algorithm.modules.q.encoder.net.0.weight"].shape[1] == 6  # 2 RGB frames: 6 input channels
    assert a["trainer.buffer.obs"].shape[1:] == (2, 3, 64, 64)  # rows x envs x one RGB frame
    saved = json.loads((tmp_path / "a" / "checkpoints" / "last.json").read_text())
    assert saved["config"]["env_kwargs"]["grayscale"] is False and saved["state"]["trainer"]["buffer"]["frame_channels"] == 3
    # the frame-once buffer read back as a dataset (canter collect --from-replay) gives whole RGB stacks
    from canter.data.dataset import TransitionDataset

    assert main(["collect", str(tmp_path / "a"), "--from-replay", "--out", str(tmp_path / "replay")]) == 0
    data = TransitionDataset.load(tmp_path / "replay")
    assert data.obs.shape[1:] == (6, 64, 64) and data.info["episodes"] >= 1


@pytest.mark.slow  # a short native run, an evaluation, two games played: ~8 s
def test_an_rgb_run_s_setting_reaches_eval_and_play(tmp_path, capsys):
    run = tmp_path / "run"
    native_atari_run_reaches_eval_and_play(capsys, run, _dqn_argv("native", run, 20))
    if importlib.util.find_spec("moviepy"):  # a video of the game (the RGB screen, as for grey frames)
        code, out, err = run_cli(capsys, "play", str(run), "--episodes", "1", "--video-dir", str(tmp_path / "video"))
        assert code == 0 and (tmp_path / "video" / "play-episode-0.mp4").stat().st_size > 0, err
    code, _, err = run_cli(capsys, "eval", str(run), "--episodes", "1", "--env-kwargs", "{grayscale: true}")
    assert_one_line_error(code, err, "spaces")  # grey frames are another observation space
