"""Rollout buffer."""
import numpy as np
import torch

from canter.data import RolloutBuffer


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


# The replay buffer's tests (stream layout, n-step, boundaries, save/load) are in tests/test_replay.py.
