"""A CartPole whose ``close`` appends its process id to a file: ``closing_env:ClosingCartPole-v0`` (importable by
Ray workers), to see which processes closed their envs (an env whose close writes a file or frees a resource)."""
from __future__ import annotations

import os

import gymnasium as gym


class ClosingCartPole(gym.Wrapper):
    """CartPole-v1 that writes ``<pid>`` as a line of ``close_log`` when closed."""

    def __init__(self, close_log: str, **kwargs) -> None:
        super().__init__(gym.make("CartPole-v1", **kwargs))
        self.close_log = close_log

    def close(self) -> None:
        with open(self.close_log, "a") as f:
            f.write(f"{os.getpid()}\n")
        super().close()


if "ClosingCartPole-v0" not in gym.registry:
    gym.register("ClosingCartPole-v0", entry_point=ClosingCartPole, disable_env_checker=True)
