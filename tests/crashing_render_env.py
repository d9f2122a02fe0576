"""A CartPole whose ``render()`` writes its own fatal error to standard error and ends the process (``os._exit(3)``),
as a native library that aborts does: ``tests.crashing_render_env:CrashingRender-v0``."""
from __future__ import annotations

import os
import sys

import gymnasium as gym
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class CrashingRender(CartPoleEnv):
    """CartPole-v1 whose first frame is the process's end, its message on standard error."""

    def render(self) -> None:  # noqa: D102
        sys.stderr.write("simlib: fatal: GPU context lost\n")
        sys.stderr.flush()
        os._exit(3)


if "CrashingRender-v0" not in gym.registry:
    gym.register("CrashingRender-v0", entry_point=CrashingRender, disable_env_checker=True)
