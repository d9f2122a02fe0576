"""Algorithms. Each module registers itself; adding one is one new file here, and ``python -m canter.builtins``
to write ``canter/builtins.json`` again (what ``canter list`` and ``--help`` show without importing this package)."""
from canter.algorithms.base import ActOutput, Algorithm
from canter.algorithms import (  # noqa: F401  (register)
    a2c, acer, appo, bc, c51, cql, ddpg, dqn, impala, iqn, mappo, ppo, qmix, recurrent_ppo, reinforce, sac, sac_discrete, td3,
    td3bc, tqc, trpo,
)

__all__ = ["ActOutput", "Algorithm"]
