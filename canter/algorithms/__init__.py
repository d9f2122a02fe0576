"""Algorithms. Each module registers itself; adding one is one new file here."""
from canter.algorithms.base import ActOutput, Algorithm
from canter.algorithms import a2c, acer, appo, dqn, impala, ppo, reinforce, trpo  # noqa: F401  (register)

__all__ = ["ActOutput", "Algorithm"]
