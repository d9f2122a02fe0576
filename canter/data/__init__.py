"""Typed batches and buffers: the rollout buffer (on-policy) and the replay buffer (off-policy)."""
from canter.data.batch import ReplayBatch, RolloutBatch, TrajectoryBatch
from canter.data.replay import ReplayBuffer
from canter.data.rollout import RolloutBuffer, compute_gae

__all__ = ["ReplayBatch", "RolloutBatch", "TrajectoryBatch", "ReplayBuffer", "RolloutBuffer", "compute_gae"]
