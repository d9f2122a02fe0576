"""ShardedReplay (the Ape-X central buffer): streams per shard, proportional sampling, routing, state."""
from __future__ import annotations

import numpy as np
import pytest

from canter.data import PrioritizedReplayBuffer, ReplayBuffer, ShardedReplay
from canter.errors import CanterError


def _fill(buf: ShardedReplay, shard: int, steps: int, start: float) -> None:
    n = buf.shards[shard].n_envs
    obs = (start + np.arange(steps + 1, dtype=np.float32))[:, None, None].repeat(n, 1)
    buf.add_rollout(shard, obs[:-1], np.zeros((steps, n), np.int64), np.ones((steps, n), np.float32), obs[-1],
                    np.zeros((steps, n)), np.ones((steps, n), bool), np.zeros((steps, n)))


def test_shards_keep_streams_and_sample_in_proportion() -> None:
    shards = [ReplayBuffer(1000, (1,), (), act_dtype=np.int64, n_envs=2, seed=i) for i in range(2)]
    buf = ShardedReplay(shards, seed=0)
    _fill(buf, 0, 300, 0.0)      # 600 transitions
    _fill(buf, 1, 100, 1000.0)   # 200 transitions
    assert len(buf) == 800
    b = buf.sample(8000)
    from_second = (b.obs[:, 0] >= 1000).float().mean().item()
    assert abs(from_second - 0.25) < 0.03
    # the next observation is the stream's own next frame, in either shard
    assert np.allclose((b.next_obs - b.obs).numpy(), 1.0)
    assert set(np.unique(b.indices.numpy() // buf.stride)) == {0, 1}


def test_prioritized_shards_match_one_buffer_weights_and_route_updates() -> None:
    shards = [PrioritizedReplayBuffer(100, (1,), (), act_dtype=np.int64, n_envs=1, seed=i) for i in range(2)]
    buf = ShardedReplay(shards, seed=0)
    _fill(buf, 0, 10, 0.0)
    _fill(buf, 1, 10, 100.0)
    b = buf.sample(64)
    td = np.where(b.obs[:, 0].numpy() >= 100, 4.0, 1.0)
    buf.update_priorities(b.indices, td)
    b2 = buf.sample(4000)
    hi = (b2.obs[:, 0] >= 100).numpy()
    assert hi.mean() > 0.6  # the shard with the larger TD errors is drawn more often
    # importance weights are relative to the smallest priority over all shards: max weight is 1
    assert b2.weights.max().item() == pytest.approx(1.0)
    assert (b2.weights[hi] < b2.weights[~hi].min()).all()


def test_new_transitions_get_the_buffer_wide_maximum_priority() -> None:
    """A shard whose transitions were never sampled gives its new ones the largest priority of all shards."""
    shards = [PrioritizedReplayBuffer(100, (1,), (), act_dtype=np.int64, n_envs=1, alpha=1.0, seed=i) for i in range(2)]
    buf = ShardedReplay(shards, seed=0)
    _fill(buf, 0, 10, 0.0)
    b = buf.sample(4)
    buf.update_priorities(b.indices, np.full(4, 9.0))
    _fill(buf, 1, 1, 100.0)  # one new transition in the other shard
    assert shards[1].sums.total == pytest.approx(shards[0].max_priority) and shards[0].max_priority > 9.0


def test_state_round_trip_and_empty_error() -> None:
    make = lambda: ShardedReplay([ReplayBuffer(50, (1,), (), act_dtype=np.int64, seed=i) for i in range(3)], seed=1)
    empty = make()
    with pytest.raises(CanterError, match="empty"):
        empty.sample(4)
    a = make()
    _fill(a, 2, 20, 5.0)
    b = make()
    b.load_state_dict(a.state_dict())
    assert np.array_equal(a.sample(16).obs.numpy(), b.sample(16).obs.numpy())
    with pytest.raises(CanterError, match="shard count"):
        ShardedReplay([ReplayBuffer(50, (1,), ())], seed=0).load_state_dict(a.state_dict())


def test_ape_x_stores_atari_frames_once_like_the_single_process_trainer() -> None:
    """Ape-X's shards for an ALE id are frame-stack buffers (7 KB per transition, not 28 KB), and
    rollouts added through them rebuild exactly the stacks a plain buffer keeps."""
    from types import SimpleNamespace

    import gymnasium as gym
    import torch

    pytest.importorskip("ale_py")
    from canter.data.framestack import FrameStackReplay
    from canter.distributed.trainers import ApeXTrainer
    from canter.envs import atari

    atari.register_ale()
    agent = SimpleNamespace(observation_space=gym.spaces.Box(0, 255, (4, 84, 84), np.uint8),
                            action_space=gym.spaces.Discrete(6))
    config = SimpleNamespace(gamma=0.99, n_step=3, buffer_size=200, her_goals=0, prioritized=False)
    trainer = SimpleNamespace(config=config, pool=SimpleNamespace(count=2, envs_per_explorer=2), agent=agent,
                              run=SimpleNamespace(seed=0, env="ALE/Pong-v5", env_kwargs={}), goals=None)
    lean = ApeXTrainer.make_buffer(trainer)
    assert all(isinstance(s, FrameStackReplay) and s.frame_channels == 1 for s in lean.shards)
    rgb = SimpleNamespace(**{**vars(trainer), "run": SimpleNamespace(seed=0, env="ALE/Pong-v5",
                                                                     env_kwargs={"grayscale": False}),
                             "agent": SimpleNamespace(observation_space=gym.spaces.Box(0, 255, (12, 84, 84), np.uint8),
                                                      action_space=agent.action_space)})
    assert all(s.frame_channels == 3 and s.obs.shape[2:] == (3, 84, 84) for s in ApeXTrainer.make_buffer(rgb).shards)
    trainer.run.env = "CartPole-v1"
    full = ApeXTrainer.make_buffer(trainer)  # the same arrays as whole stacks
    assert not any(isinstance(s, FrameStackReplay) for s in full.shards)
    assert full.shards[0].nbytes() > 3.5 * lean.shards[0].nbytes()
    # two rollouts per shard of a frame stream with an episode start (a stack padded with its first frame)
    rng = np.random.default_rng(0)
    for shard in range(2):
        frames = rng.integers(0, 255, size=(41, 2, 84, 84), dtype=np.uint8)
        # env e's stack at step t: its last 4 frames, padded with the episode's first (episodes start at 0 and 20)
        stacks = np.stack([frames[np.clip(np.arange(t - 3, t + 1), 0 if t < 20 else 20, None)] for t in range(41)])
        stacks = stacks.swapaxes(1, 2)  # [T, n_envs, 4, 84, 84]
        valid = np.ones((40, 2), bool)
        valid[19] = False  # the reset-only step into the new episode
        for t0 in (0, 20):
            args = (shard, stacks[t0:t0 + 20], np.zeros((20, 2), np.int64), np.ones((20, 2), np.float32),
                    stacks[t0 + 20], np.zeros((20, 2), bool), valid[t0:t0 + 20], np.zeros((20, 2), bool))
            lean.add_rollout(*args)
            full.add_rollout(*args)
    idx = np.concatenate([s * lean.stride + lean.shards[s].chronological_indices() for s in range(2)])
    for s in range(2):
        local = idx[idx // lean.stride == s] % lean.stride
        a, b = lean.shards[s].transitions(local), full.shards[s].transitions(local)
        assert torch.equal(a.obs, b.obs) and torch.equal(a.next_obs, b.next_obs) and torch.equal(a.rewards, b.rewards)
