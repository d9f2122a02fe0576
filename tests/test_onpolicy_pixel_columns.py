"""The on-policy rollout and ACER's segment replay keep the pixels of packed float32 observations (an image beside
a float entry) as bytes: a quarter of the memory, the very batches the plain float32 storage gives, saved and
resumed exactly."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.data.pixel_columns import PixelColumns
from canter.data.rollout import RolloutBuffer
from canter.data.segments import SegmentReplay
from canter.envs.packing import ObservationPacker

IMAGE = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
#: float columns before, between and after two images
SPACE = gym.spaces.Tuple((gym.spaces.Box(-1.0, 1.0, (2,), np.float32), IMAGE,
                          gym.spaces.Box(-1.0, 1.0, (1,), np.float32), gym.spaces.Box(0, 255, (8, 9), np.uint8)))
PACKER = ObservationPacker(SPACE, gym.spaces.Discrete(3))
COLUMNS = PixelColumns.of(PACKER.space)
WIDTH, T, N = PACKER.space.shape[0], 5, 3
ENV = "image_dict_env:DictImageCue-v0"


def _obs(rng: np.random.Generator) -> np.ndarray:
    SPACE.seed(int(rng.integers(1 << 30)))
    return np.stack([PACKER(SPACE.sample()) for _ in range(N)])


def _steps(count: int, seed: int = 0) -> list[tuple]:
    """``count`` vector steps (observations as NumPy rows and as a tensor, reset-only rows included)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(count):
        obs = _obs(rng)
        out.append((obs if t % 2 else torch.from_numpy(obs), rng.integers(0, 3, N), rng.normal(size=N).astype(np.float32),
                    rng.normal(size=N).astype(np.float32), rng.normal(size=N).astype(np.float32), rng.random(N) < 0.2,
                    rng.random(N) < 0.1, rng.random(N) > 0.2))
    return out


def _rollouts() -> tuple[RolloutBuffer, RolloutBuffer]:
    return (RolloutBuffer(T, N, (WIDTH,), (), act_dtype=torch.int64),
            RolloutBuffer(T, N, (WIDTH,), (), act_dtype=torch.int64, pixel_columns=COLUMNS))


def _fill(buffers: tuple[RolloutBuffer, ...], steps: list[tuple]) -> None:
    for step in steps:
        for buf in buffers:
            buf.add(*step)


def _assert_identical(a: tuple, b: tuple) -> None:
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            _assert_identical(x, y)
        else:
            assert x.dtype == y.dtype and x.shape == y.shape
            torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_pixel_columns_split_and_join_give_back_the_rows():
    obs = _obs(np.random.default_rng(1))
    pixels, rest = COLUMNS.split(obs)
    assert pixels.dtype == np.uint8 and pixels.shape == (N, 8 * 8 * 3 + 72) and rest.shape == (N, 3)
    joined = COLUMNS.join(pixels, rest)
    assert joined.dtype == np.float32 and np.array_equal(joined, obs)
    assert PixelColumns.of(gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)) is None


@pytest.mark.parametrize("all_valid", [True, False])
def test_rollout_batches_equal_the_plain_rollouts_bit_for_bit(all_valid):
    plain, split = _rollouts()
    steps = _steps(T)
    if all_valid:
        steps = [step[:-1] + (np.ones(N, bool),) for step in steps]
    _fill((plain, split), steps)
    assert split.pixels.dtype == torch.uint8 and split.obs.shape[2:] == (3,)
    last = torch.arange(N, dtype=torch.float32)
    _assert_identical(plain.finish(last, 0.99, 0.95), split.finish(last, 0.99, 0.95))
    _fill((plain, split), steps)
    starts, state = np.ones((T, N), bool), (torch.zeros(1, N, 2), torch.zeros(1, N, 2))
    _assert_identical(plain.finish_sequences(last, 0.9, 0.9, starts, state),
                      split.finish_sequences(last, 0.9, 0.9, starts, state))


def test_rollout_holds_about_a_quarter_of_the_bytes():
    plain, split = _rollouts()

    def nbytes(buf: RolloutBuffer) -> int:
        return sum(t.numel() * t.element_size() for t in vars(buf).values() if isinstance(t, torch.Tensor))

    assert split.obs.nbytes + split.pixels.nbytes < 0.3 * plain.obs.nbytes and nbytes(split) < 0.35 * nbytes(plain)


def test_a_rollout_under_way_resumes_exactly_also_from_a_plain_rollouts_state():
    plain, split = _rollouts()
    steps = _steps(T, seed=2)
    _fill((plain, split), steps[:2])
    saved = split.state_dict()
    assert saved["pixels"].dtype == torch.uint8 and saved["obs"].shape[2:] == (3,)
    for state in (saved, plain.state_dict()):  # its own state, or whole float rows (saved before this storage)
        again = _rollouts()[1]
        again.load_state_dict(state)
        other = _rollouts()[0]
        other.load_state_dict(plain.state_dict())
        _fill((other, again), steps[2:])
        last = torch.ones(N)
        _assert_identical(other.finish(last, 0.99, 0.95), again.finish(last, 0.99, 0.95))


def _replays() -> tuple[SegmentReplay, SegmentReplay]:
    return (SegmentReplay(3, T, N, (WIDTH,), 3),
            SegmentReplay(3, T, N, (WIDTH,), 3, pixel_columns=COLUMNS))


def _segment(replays: tuple[SegmentReplay, ...], seed: int) -> list:
    steps, out = _steps(T + 1, seed), []
    for t, (obs, actions, probs, _, rewards, terminated, dones, valid) in enumerate(steps[:T]):
        probs = np.abs(np.stack([probs] * 3, -1))
        for rep in replays:
            rep.add(t, obs, actions, probs, rewards, terminated, dones, valid)
    for rep in replays:
        out.append(rep.finish(torch.as_tensor(steps[T][0])))
    return out


def test_segments_and_their_replays_equal_the_plain_replays_bit_for_bit():
    plain, split = _replays()
    for seed in range(5):  # the ring wraps
        _assert_identical(*_segment((plain, split), seed))
    assert split.pixels.dtype == torch.uint8 and split.obs.shape[3:] == (3,)
    assert split.obs.nbytes + split.pixels.nbytes < 0.3 * plain.obs.nbytes
    for seed in range(3):
        _assert_identical(plain.sample(np.random.default_rng(seed)), split.sample(np.random.default_rng(seed)))
    kept = split.slot_copy()
    assert "pixels" in kept
    _segment((split,), 9)
    split.pos = (split.pos - 1) % split.capacity
    split.restore_slot(kept)
    _assert_identical(plain.segment(split.pos), split.segment(split.pos))


def test_a_segment_replay_resumes_exactly_also_from_a_plain_replays_state():
    plain, split = _replays()
    for seed in range(2):
        _segment((plain, split), seed)
    for state in (split.state_dict(), plain.state_dict()):
        other, again = _replays()
        again.load_state_dict(state)
        other.load_state_dict(plain.state_dict())
        _assert_identical(*_segment((other, again), 7))
        _assert_identical(other.sample(np.random.default_rng(0)), again.sample(np.random.default_rng(0)))


@pytest.mark.parametrize("algo", ["a2c", "acer"])
def test_the_trainers_store_float_packed_pixels_as_bytes(algo):
    trainer = canter.make_trainer(algo, ENV, n_envs=2, n_steps=4, max_steps=8, env_kwargs={"float_flip": True},
                                  eval_episodes=0, quiet=True)
    trainer.setup()
    store = trainer.replay if algo == "acer" else trainer.buffer
    assert store.pixels.dtype == torch.uint8 and store.pixels.shape[-1] == 36 * 36 and store.obs.shape[-1] == 1
    trainer.env.close()
    uint8 = canter.make_trainer(algo, ENV, n_envs=2, n_steps=4, max_steps=8, eval_episodes=0, quiet=True)
    uint8.setup()  # a packed space of bytes only is stored as it is
    assert (uint8.replay if algo == "acer" else uint8.buffer).columns is None
    uint8.env.close()


@pytest.mark.slow  # two short PPO runs and one resumed: ~4 s
def test_a_ppo_run_on_an_image_and_a_float_resumes_exactly(tmp_path):
    from safetensors.numpy import load_file

    from canter.cli import main

    def argv(run: str, steps: int) -> list[str]:
        return ["train", "ppo", "--env", ENV, "--n-envs", "2", "--env-kwargs", "{float_flip: true}", "--set",
                "n_steps=8", "--set", "batch_size=8", "--set", "net_arch=[16]", "--eval-episodes", "0", "--quiet",
                "--max-steps", str(steps), "--run-dir", str(tmp_path / run)]

    assert main(argv("a", 32)) == 0
    assert main(["train", "--resume", str(tmp_path / "a"), "--max-steps", "80", "--quiet"]) == 0
    assert main(argv("b", 80)) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["resume_exact"] is True
    a, b = (load_file(str(tmp_path / r / "checkpoints" / "last.safetensors")) for r in "ab")
    assert a.keys() == b.keys() and [k for k in a if not np.array_equal(a[k], b[k])] == []


def _interrupt_at(step: int):
    def after_update(trainer, losses):
        if trainer.step >= step and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"  # as Ctrl-C does: the run saves checkpoints/last and stops
    return after_update


@pytest.mark.slow  # an ACER run whole and one interrupted and resumed: ~4 s
def test_an_acer_run_on_an_image_and_a_float_resumes_exactly(tmp_path):
    """Interrupted at 30 steps with its ring of 4 segments part full, it resumes from the uint8 pixels it saved
    and ends as the uninterrupted run (the same max_steps: ACER's learning rate decays over the run's budget)."""
    from safetensors.numpy import load_file

    common = dict(env_kwargs={"float_flip": True}, seed=3, n_envs=2, n_steps=5, buffer_size=40, replay_start=20,
                  net_arch=[16], max_steps=80, eval_episodes=0, quiet=True)
    canter.train("acer", env=ENV, run_dir=tmp_path / "whole", **common)
    canter.train("acer", env=ENV, run_dir=tmp_path / "part", hooks={"after_update": _interrupt_at(30)}, **common)
    part = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert part["stop_reason"] == "interrupted" and part["steps"] == 30
    saved = load_file(str(tmp_path / "part" / "checkpoints" / "last.safetensors"))
    assert saved["trainer.segment_replay.pixels"].dtype == np.uint8
    assert saved["trainer.segment_replay.pixels"].shape[1:] == (6, 2, 36 * 36)
    assert saved["trainer.segment_replay.obs"].shape[1:] == (6, 2, 1)
    canter.resume(tmp_path / "part")
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True
    a, b = (load_file(str(tmp_path / r / "checkpoints" / "last.safetensors")) for r in ("whole", "part"))
    assert a.keys() == b.keys() and [k for k in a if not np.array_equal(a[k], b[k])] == []


@pytest.mark.slow  # ~20 s
def test_ppo_learns_from_an_image_beside_a_float(tmp_path):
    """DictImageCue-v0 with its flag as a float: the rollout keeps the pixels as bytes; 5 of 10 from either entry
    alone, 10 from both."""
    run = tmp_path / "ppo"
    canter.train("ppo", env=ENV, env_kwargs={"float_flip": True}, seed=0, max_steps=8_000, n_envs=8, n_steps=32,
                 batch_size=64, n_epochs=10, lr=1e-3, run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    assert json.loads((run / "summary.json").read_text())["last_eval_return"] >= 9.5


def test_the_synchronous_explorer_learner_stores_float_packed_pixels_as_bytes(monkeypatch):
    """PPO's learner with explorers (SyncTrainer, here with the in-process pool) copied the explorers' whole float
    rows into the rollout's obs, which holds only the other columns once the pixels are bytes: torch's
    'output with shape [8, 2, 1] doesn't match the broadcast shape [8, 2, 1297]'. The batch learned from is the
    explorers' observations."""
    from canter.config import resolve_config
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import SyncTrainer
    from canter.envs import make_vec_env

    run, cfg = resolve_config("ppo", ENV, hparams={"n_steps": 8, "batch_size": 16, "n_epochs": 1, "net_arch": [16]}, n_envs=2,
                              max_steps=16, eval_every=0, env_kwargs={"float_flip": True})
    env = make_vec_env(run.env, run.n_envs, env_kwargs={"float_flip": True})
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    rollouts, batches = [], []
    rollout, learn = Explorer.rollout, agent.learn
    monkeypatch.setattr(Explorer, "rollout", lambda self, *a, **k: rollouts.append(rollout(self, *a, **k)) or rollouts[-1])
    monkeypatch.setattr(agent, "learn", lambda batch: batches.append(batch) or learn(batch))
    trainer = SyncTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    list(trainer())
    trainer.close()
    assert trainer.buffer.pixels.dtype == torch.uint8 and trainer.buffer.obs.shape[-1] == 1
    assert len(batches) == 1  # one rollout of 8 steps x 2 envs
    sent = rollouts[0]["obs"][rollouts[0]["valid"]]  # the rows of real transitions, time-major as the batch's
    assert batches[0].obs.shape == sent.shape and np.array_equal(batches[0].obs.numpy(), sent)
