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
