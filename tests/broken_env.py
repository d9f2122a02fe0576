"""CartPole copies that fail inside a vector env's worker: ``broken_env:BrokenCartPole-v0``.

``gym.make("BrokenCartPole-v0", fail=WHAT)`` fails only in a process that ``multiprocessing`` started (an
``AsyncVectorEnv`` worker; the parent builds a copy of its own to read the spaces, which works). ``fail``: ``step``
(a ValueError on the first step), ``reset`` (a KeyError on reset), ``make`` (the constructor raises),
``exit`` (the worker process dies: ``os._exit(3)`` on the first step), ``slow`` (each step sleeps 0.05 s), ``slow_make`` (the constructor sleeps 3 s);
anything else: a plain CartPole.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

import gymnasium as gym


class BrokenCartPole(gym.Wrapper):
    """CartPole-v1 that fails as ``fail`` says when it runs in a worker process."""

    def __init__(self, fail: str = "step") -> None:
        self.fail = fail if multiprocessing.parent_process() is not None else None
        if self.fail == "make":
            raise OSError("no simulator licence in this process")
        if self.fail == "slow_make":
            time.sleep(3)
        super().__init__(gym.make("CartPole-v1"))

    def reset(self, **kwargs: Any) -> Any:  # noqa: D102
        if self.fail == "reset":
            raise KeyError("level_3")
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:  # noqa: D102
        if self.fail == "step":
            raise ValueError("pole length must be positive, got -1")
        if self.fail == "exit":
            os._exit(3)
        if self.fail == "slow":
            time.sleep(0.05)
        return self.env.step(action)


if "BrokenCartPole-v0" not in gym.registry:
    gym.register("BrokenCartPole-v0", entry_point=BrokenCartPole, disable_env_checker=True)
