"""A CartPole whose simulator crashes once: ``flaky_env:FlakyCartPole-v0`` (importable by Ray workers).

``gym.make("FlakyCartPole-v0", crash_file=PATH, spare_pid=PID)``: the first ``step`` in any process
other than ``spare_pid`` (the learner's, whose evaluation env must not crash) that finds ``PATH``
removes it and raises, so exactly one crash happens per file, whichever explorer sees it. With
``always=True`` every step outside ``spare_pid`` raises. With ``broken_file=PATH`` the constructor raises
inside a Ray actor (an explorer) while ``PATH`` exists: an env that cannot be built on an explorer's node.
With ``slow_start=S`` the constructor sleeps S seconds inside a Ray actor: explorers that take long to build.
With ``hang=True`` a crash is a ``step`` that never returns instead (a deadlocked simulator, a network env).
Outside ``spare_pid``, ``step_seconds=S`` makes every step take S seconds more (a slow simulator), and
``close_file=PATH`` makes ``close`` append the process id to ``PATH`` (an env whose close must run).
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any

import gymnasium as gym


def _in_ray_actor() -> bool:
    if "ray" not in sys.modules:
        return False
    import ray

    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None


class FlakyCartPole(gym.Wrapper):
    """CartPole-v1 that raises once when ``crash_file`` exists."""

    def __init__(self, crash_file: str | None = None, spare_pid: int | None = None, always: bool = False,
                 broken_file: str | None = None, slow_start: float = 0.0, hang: bool = False,
                 step_seconds: float = 0.0, close_file: str | None = None, **kwargs: Any) -> None:
        if broken_file and os.path.exists(broken_file) and _in_ray_actor():
            raise ValueError("cannot open the simulator")
        if slow_start and _in_ray_actor():
            time.sleep(slow_start)
        super().__init__(gym.make("CartPole-v1", **kwargs))
        self.crash_file = crash_file if spare_pid != os.getpid() else None
        self.always, self.hang = always, hang
        spared = spare_pid == os.getpid()
        self.step_seconds, self.close_file = (0.0, None) if spared else (step_seconds, close_file)

    def close(self) -> None:  # noqa: D102
        if self.close_file:
            with open(self.close_file, "a") as f:
                f.write(f"{os.getpid()}\n")
        super().close()

    def step(self, action: Any) -> Any:  # noqa: D102
        if self.step_seconds:
            time.sleep(self.step_seconds)
        if self.always and self.crash_file:
            self._crash()
        if self.crash_file and os.path.exists(self.crash_file):
            try:
                os.remove(self.crash_file)
            except FileNotFoundError:
                pass
            else:
                self._crash()
        return self.env.step(action)

    def _crash(self) -> None:
        while self.hang:  # (the explorer is killed)
            time.sleep(3600)
        raise RuntimeError("simulated simulator crash")


if "FlakyCartPole-v0" not in gym.registry:
    gym.register("FlakyCartPole-v0", entry_point=FlakyCartPole, disable_env_checker=True)
