"""Replay buffers keep the pixels of packed float32 observations (an image beside a float entry) as
bytes: 4x less memory, the very batches a plain float32 buffer samples, saves and resumes."""
from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.data.her import HerReplayBuffer
from canter.data.pixel_columns import pixel_columns_buffer, pixel_columns_class, split_pixels
from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from canter.envs.packing import ObservationPacker
from canter.errors import CanterError
from canter.trainers.off_policy import make_replay_buffer

IMAGE = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
#: float columns before, between and after two images
SPACE = gym.spaces.Tuple((gym.spaces.Box(-1.0, 1.0, (2,), np.float32), IMAGE,
                          gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Box(0, 255, (8, 9), np.uint8)))
PACKER = ObservationPacker(SPACE, gym.spaces.Discrete(2))
N_ENVS = 2


def _obs(rng: np.random.Generator) -> np.ndarray:
    SPACE.seed(int(rng.integers(1 << 30)))
    return np.stack([PACKER(SPACE.sample()) for _ in range(N_ENVS)])


def _buffers(cls: type[ReplayBuffer] = ReplayBuffer, seed: int = 3) -> tuple[ReplayBuffer, ReplayBuffer]:
    """A plain float32 buffer and one keeping pixels as bytes, alike otherwise (ring wraps after 8 rows)."""
    args = (16, PACKER.space.shape, (1,))
    kwargs = dict(obs_dtype=np.float32, n_envs=N_ENVS, n_step=3, seed=seed)
    return cls(*args, **kwargs), pixel_columns_buffer(cls, PACKER.space, *args, **kwargs)


def _feed(buffers: tuple[ReplayBuffer, ...], steps: int, seed: int = 0) -> None:
    """The same stream into each buffer: episode ends, reset-only rows and a broken stream (a reset) included."""
    rng = np.random.default_rng(seed)
    obs = _obs(rng)
    for t in range(steps):
        if t == 7:
            obs = _obs(rng)  # not the last next observation: a boundary row
        nxt = _obs(rng)
        step = (obs, rng.normal(size=(2, 1)), rng.normal(size=2).astype(np.float32), nxt, rng.random(2) < 0.1,
                rng.random(2) < 0.9, rng.random(2) < 0.1)
        for buf in buffers:
            buf.add(*step)
        obs = nxt


def _assert_same_batches(a: ReplayBuffer, b: ReplayBuffer, batch_size: int = 32) -> None:
    for x, y in zip(a.sample(batch_size), b.sample(batch_size)):
        assert x.dtype == y.dtype
        torch.testing.assert_close(x, y, rtol=0, atol=0)


@pytest.mark.parametrize("cls", [ReplayBuffer, PrioritizedReplayBuffer])
def test_sampled_batches_equal_a_plain_float_buffers_at_a_quarter_of_the_memory(cls):
    plain, split = _buffers(cls)
    assert type(split).__name__ == f"PixelColumns{cls.__name__}" and split.pixels.dtype == np.uint8
    _feed((plain, split), 30)
    assert len(plain) == len(split)
    for _ in range(3):
        first = plain.sample(32)
        second = split.sample(32)
        for x, y in zip(first, second):
            torch.testing.assert_close(x, y, rtol=0, atol=0)
        if cls is PrioritizedReplayBuffer:
            for buf, batch in ((plain, first), (split, second)):
                buf.update_priorities(batch.indices, torch.arange(32.0))
    assert split.nbytes() < 0.3 * plain.nbytes()


def test_saved_and_loaded_it_continues_as_the_plain_buffer_does(tmp_path):
    plain, split = _buffers()
    _feed((plain, split), 12)
    path = split.save(tmp_path / "buffer.npz")
    with np.load(path, allow_pickle=False) as data:
        assert data["pixels"].dtype == np.uint8 and data["obs"].shape[2:] == (3,)
    again = _buffers(seed=99)[1]
    again.load(path)
    plain.rng.bit_generator.state = split.rng.bit_generator.state
    _assert_same_batches(plain, again)
    _feed((plain, again), 9, seed=1)  # wraps the ring
    _assert_same_batches(plain, again)


def test_a_plain_buffers_file_of_whole_float_rows_loads_into_it(tmp_path):
    """A run saved before pixels were stored as bytes resumes: its rows are split on loading."""
    plain, _ = _buffers()
    _feed((plain,), 12)
    path = plain.save(tmp_path / "old.npz")
    split = _buffers(seed=99)[1]
    split.load(path)
    _assert_same_batches(plain, split)
    _feed((plain, split), 9, seed=1)
    _assert_same_batches(plain, split)


def test_loading_a_buffer_of_other_observations_is_one_clear_error(tmp_path):
    other = ReplayBuffer(16, (PACKER.space.shape[0] + 1,), (1,), n_envs=N_ENVS)
    path = other.save(tmp_path / "other.npz")
    with pytest.raises(CanterError, match="observations do not match"):
        _buffers()[1].load(path)


def test_a_pixel_column_holding_a_fraction_is_refused_in_one_line():
    _, split = _buffers()
    obs = _obs(np.random.default_rng(0))
    bad = obs.copy()
    bad[0, PACKER.space.image_slices()[0][0].start] = 0.5
    with pytest.raises(CanterError, match="not pixels"):
        split.add(bad, np.zeros((2, 1)), np.zeros(2, np.float32), obs, np.zeros(2, bool))


def test_make_replay_buffer_splits_only_float_packed_images():
    def made(space: gym.Space, **config) -> ReplayBuffer:
        agent = types.SimpleNamespace(observation_space=space, action_space=gym.spaces.Discrete(2))
        return make_replay_buffer(agent, types.SimpleNamespace(gamma=0.99, **config), 64, 1, 0)

    assert type(made(PACKER.space)).__name__ == "PixelColumnsReplayBuffer"
    assert type(made(PACKER.space, prioritized=True, per_alpha=0.6, per_beta0=0.4, per_eps=1e-6)).__name__ == \
        "PixelColumnsPrioritizedReplayBuffer"
    box = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    assert type(made(box)) is ReplayBuffer  # CartPole's path is untouched
    bytes_only = ObservationPacker(gym.spaces.Dict({"img": IMAGE, "d": gym.spaces.Discrete(3)}), gym.spaces.Discrete(2))
    assert bytes_only.space.dtype == np.uint8 and not split_pixels(bytes_only.space)
    assert type(made(bytes_only.space)) is ReplayBuffer
    assert not split_pixels(ObservationPacker(gym.spaces.Dict({"a": box}), gym.spaces.Discrete(2)).space)


def test_hindsight_buffers_save_their_own_arrays_and_the_pixels():
    cls = pixel_columns_class(HerReplayBuffer)
    assert issubclass(cls, HerReplayBuffer) and cls.ARRAYS == HerReplayBuffer.ARRAYS + ("pixels",)
    assert pixel_columns_class(HerReplayBuffer) is cls


@pytest.mark.slow  # three short runs and a dataset of the replay buffer: ~2 s
def test_a_dqn_run_on_an_image_and_a_float_resumes_exactly_and_reads_back_as_a_dataset(tmp_path):
    """A run keeps its pixels as bytes in its checkpoint; resumed, it is the uninterrupted run; its replay buffer
    read back as a dataset (``canter collect --from-replay``) gives the whole float32 observations."""
    import json

    from safetensors.numpy import load_file

    from canter.cli import main
    from canter.data.dataset import TransitionDataset

    def argv(run: str, steps: int) -> list[str]:
        return ["train", "dqn", "--env", "image_dict_env:DictImageCue-v0", "--n-envs", "2", "--env-kwargs",
                "{float_flip: true}", "--set", "buffer_size=61", "--set", "learning_starts=10", "--set", "batch_size=4",
                "--set", "train_freq=2", "--set", "net_arch=[16]", "--eval-episodes", "0", "--quiet", "--max-steps",
                str(steps), "--run-dir", str(tmp_path / run)]

    assert main(argv("a", 20)) == 0
    assert main(["train", "--resume", str(tmp_path / "a"), "--max-steps", "60", "--quiet"]) == 0
    assert main(argv("b", 60)) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["resume_exact"] is True
    a, b = (load_file(str(tmp_path / r / "checkpoints" / "last.safetensors")) for r in "ab")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert a["trainer.buffer.pixels"].dtype == np.uint8 and a["trainer.buffer.pixels"].shape[2:] == (36 * 36,)
    assert a["trainer.buffer.obs"].dtype == np.float32 and a["trainer.buffer.obs"].shape[2:] == (1,)
    assert main(["collect", str(tmp_path / "a"), "--from-replay", "--out", str(tmp_path / "replay")]) == 0
    data = TransitionDataset.load(tmp_path / "replay")
    assert data.obs.dtype == np.float32 and data.obs.shape[1:] == (36 * 36 + 1,) and data.info["episodes"] >= 1
    # Dict keys in order: flip (column 0), then the image's pixels
    assert set(np.unique(data.obs[:, 1:])) == {0.0, 255.0} and set(np.unique(data.obs[:, 0])) == {-1.0, 1.0}
