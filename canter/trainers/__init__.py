"""Trainers: one per algorithm family. Calling a trainer returns a generator of TrainRecords."""
from canter.trainers.on_policy_replay import SegmentReplayTrainer
from canter.trainers.base import EpisodeInfo, Trainer, TrainRecord
from canter.trainers.evaluation import EvalResult, evaluate
from canter.trainers.off_policy import OffPolicyTrainer
from canter.trainers.offline import OfflineTrainer
from canter.trainers.on_policy import OnPolicyTrainer
from canter.trainers.recurrent import RecurrentOnPolicyTrainer

TRAINERS = {"on_policy": OnPolicyTrainer, "off_policy": OffPolicyTrainer, "on_policy_replay": SegmentReplayTrainer,
            "on_policy_recurrent": RecurrentOnPolicyTrainer}

__all__ = [
    "EpisodeInfo", "EvalResult", "OffPolicyTrainer", "OfflineTrainer", "OnPolicyTrainer", "RecurrentOnPolicyTrainer",
    "SegmentReplayTrainer", "TRAINERS", "Trainer", "TrainRecord",
    "evaluate",
]
