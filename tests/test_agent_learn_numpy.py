"""``agent.learn(batch)`` of a batch built by hand from NumPy arrays (a Tianshou user's ``policy.learn(batch)``): the
Agent is the NumPy/torch boundary, and takes them as the buffers' tensors would be (floating arrays as float32). It
was ``AttributeError: 'numpy.ndarray' object has no attribute 'float'`` inside DQN's loss."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from canter.agents import Agent
from canter.algorithms.dqn import DQN
from canter.data.batch import ReplayBatch, numpy_as_tensors


def _agent() -> Agent:
    return Agent(DQN(gym.spaces.Box(-5, 5, (4,), np.float32), gym.spaces.Discrete(2), DQN.Config(), seed=0))


def test_a_replay_batch_of_numpy_arrays_learns_as_its_tensors():
    rng = np.random.default_rng(0)
    n = 32
    arrays = ReplayBatch(rng.normal(size=(n, 4)), rng.integers(0, 2, n), rng.normal(size=n), rng.normal(size=(n, 4)),
                         np.zeros(n), np.full(n, 0.99), np.ones(n), np.arange(n))  # float64, as NumPy makes them
    tensors = ReplayBatch(*(torch.from_numpy(a.astype(np.float32) if a.dtype.kind == "f" else a) for a in arrays))
    assert _agent().learn(arrays) == _agent().learn(tensors)


def test_read_only_arrays_learn_without_torchs_warning():
    """Read-only arrays (a memory-mapped dataset's, np.load(mmap_mode='r')) were given to torch.from_numpy as they
    were: 'UserWarning: The given NumPy array is not writable' (an error under -W error)."""
    import warnings

    rng = np.random.default_rng(0)
    n = 32
    arrays = ReplayBatch(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 2, n),
                         rng.normal(size=n).astype(np.float32), rng.normal(size=(n, 4)).astype(np.float32),
                         np.zeros(n, np.float32), np.full(n, 0.99, np.float32), np.ones(n, np.float32), np.arange(n))
    for a in arrays:
        a.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = _agent().learn(arrays)
    assert stats == _agent().learn(ReplayBatch(*(torch.from_numpy(a.copy()) for a in arrays)))
    # (torch warns once per process: a copy is what keeps it quiet wherever this test runs)
    assert numpy_as_tensors(arrays.obs).data_ptr() != arrays.obs.ctypes.data
