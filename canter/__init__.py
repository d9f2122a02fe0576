"""canter: deep reinforcement learning on PyTorch.

>>> import canter
>>> agent = canter.train("ppo", env="CartPole-v1", target_reward=475, seed=1)   # doctest: +SKIP
>>> agent.predict(obs)                                                          # doctest: +SKIP
"""
__version__ = "0.1.0"

from canter.api import load, make_agent, make_trainer, resume, train  # noqa: E402
from canter.registry import lookup, names, register  # noqa: E402

__all__ = ["__version__", "load", "lookup", "make_agent", "make_trainer", "names", "register", "resume", "train"]
