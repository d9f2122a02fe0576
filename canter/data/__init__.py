"""Typed batches and buffers: the rollout buffer (on-policy) and the replay buffers (off-policy)."""
from canter.data.batch import ReplayBatch, RolloutBatch, TrajectoryBatch
from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from canter.data.rollout import RolloutBuffer, compute_gae
from canter.data.sharded import ShardedReplay
from canter.data.sumtree import MinTree, SumTree

__all__ = [
    "MinTree", "PrioritizedReplayBuffer", "ReplayBatch", "ReplayBuffer", "RolloutBatch", "RolloutBuffer", "ShardedReplay",
    "SumTree",
    "TrajectoryBatch", "compute_gae",
]
