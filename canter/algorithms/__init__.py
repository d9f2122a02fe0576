"""Algorithms. Each module registers itself; adding one is one new file here."""
from canter.algorithms.base import ActOutput, Algorithm
from canter.algorithms import ddpg, dqn, ppo, sac, sac_discrete, td3  # noqa: F401  (register)

__all__ = ["ActOutput", "Algorithm"]
