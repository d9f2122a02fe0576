"""Rollout and replay buffers."""
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from canter.data import ReplayBuffer, RolloutBuffer


def test_rollout_buffer_drops_autoreset_steps_and_computes_returns():
    buf = RolloutBuffer(3, 2, (1,), ())
    valid = [np.array([True, True]), np.array([True, False]), np.array([True, True])]
    for t in range(3):
        buf.add(torch.full((2, 1), float(t)), torch.tensor([t, t]), torch.zeros(2), torch.ones(2),
                np.ones(2, np.float32), np.zeros(2, bool), np.array([False, t == 0]), valid[t])
    batch = buf.finish(torch.ones(2), gamma=1.0, gae_lambda=1.0)
    assert batch.obs.shape == (5, 1)  # 6 steps minus the one autoreset step
    np.testing.assert_allclose(batch.returns.numpy(), (batch.advantages + batch.values).numpy())
    assert buf.pos == 0


def test_replay_buffer_skips_invalid_and_wraps():
    buf = ReplayBuffer(4, (2,), (), act_dtype=np.int64, seed=0)
    for i in range(3):
        obs = np.full((2, 2), i, np.float32)
        buf.add(obs, np.array([i, i]), np.array([1.0, 2.0], np.float32), obs + 1, np.array([0.0, 1.0], np.float32),
                np.array([True, i != 1]))
    assert len(buf) == 4 and buf.pos == 1  # 5 valid rows into capacity 4
    batch = buf.sample(16)
    assert batch.obs.shape == (16, 2) and batch.actions.dtype == torch.int64
    np.testing.assert_allclose(batch.next_obs.numpy(), batch.obs.numpy() + 1)


@settings(max_examples=30, deadline=None)
@given(capacity=st.integers(1, 20), adds=st.lists(st.integers(1, 5), min_size=1, max_size=12))
def test_replay_buffer_keeps_the_most_recent_transitions(capacity, adds):
    buf = ReplayBuffer(capacity, (1,), (), seed=1)
    counter = 0
    for n in adds:
        obs = np.arange(counter, counter + n, dtype=np.float32)[:, None]
        buf.add(obs, np.zeros(n), np.zeros(n, np.float32), obs, np.zeros(n, np.float32))
        counter += n
    assert len(buf) == min(capacity, counter)
    stored = sorted(buf.obs[: len(buf), 0].tolist())
    assert stored == list(range(counter - len(buf), counter))


def test_replay_buffer_state_round_trip_continues_sampling_identically():
    a = ReplayBuffer(8, (1,), (), seed=3)
    obs = np.arange(6, dtype=np.float32)[:, None]
    a.add(obs, np.zeros(6), np.ones(6, np.float32), obs, np.zeros(6, np.float32))
    a.sample(4)
    b = ReplayBuffer(8, (1,), (), seed=99)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.sample(5).obs.numpy(), b.sample(5).obs.numpy())
