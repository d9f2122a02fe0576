"""Envs that break gymnasium's API in small ways, for the env plumbing's errors (``odd_api_env:ID``).

``CloseRaises-v0``: a working env whose ``close()`` raises (and counts its calls in ``CLOSED``, per process).
``NoRenderModes-v0``: takes a render_mode, declares none (no ``metadata["render_modes"]``), has no ``render()``.
``GraphObs-v0``: observations in a ``Graph`` space (no fixed shape).
``SameStepVec-v0``: a native vectorised implementation (``vector_entry_point``) in SAME_STEP autoreset mode.
``DiscreteOut-v0``: Discrete(4, start=1) observations, with 7 on the 3rd step (outside the space).
``MultiDiscreteOut-v0``: MultiDiscrete([3, 2], start=[-1, 5]) observations, [-3, 5] on the 3rd step (below start).
``RenderCloseRaises-v0``: renders 16x16 black rgb_array frames; its close() raises (counted in ``CLOSED``).
``InfoUnpicklable-v0``: an info holding a lambda on every step (async workers cannot send it).
``NeedsSize-v0``: a constructor with a required argument, ``size`` (``OddSizedFactory-v0``: a factory's).
``StepNone-v0``: ``step()`` returns None. ``BuggyStep-v0``: a bug of its own in ``step()`` (unpacking a None).
``BuggyInit-v0``: a constructor with a bug of its own (a TypeError). ``HelperArgLeftOut-v0``: a constructor that
calls a helper of its own without a required argument (its bug, not the user's).
``InfoList-v0`` / ``InfoNone-v0``: ``step()`` returns a list / None as its info on the 2nd step (after gymnasium's
passive checker looked at the first). ``ResetInfoNone-v0``: ``reset()`` returns ``(obs, None)``. The same classes
are canter-registered factories as ``OddFactory-v0`` (``kind=`` one of the names above, without ``-v0``).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import canter

#: how many times a CloseRaises env's close() was called in this process
CLOSED = [0]


def _map_size(name: str, scale: int) -> int:
    return len(name) * scale


class Odd(gym.Env):
    """Three random numbers per step, episodes of 5 steps."""

    def __init__(self, kind: str = "Plain", render_mode: str | None = None) -> None:
        self.render_mode = render_mode  # taken, but no render_modes declared and no render()
        self.observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.kind, self.t = kind, 0
        if kind == "DiscreteOut":
            self.observation_space = gym.spaces.Discrete(4, start=1)
        if kind == "MultiDiscreteOut":
            self.observation_space = gym.spaces.MultiDiscrete([3, 2], start=[-1, 5])
        if kind == "RenderCloseRaises":
            self.metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
        if kind == "HelperArgLeftOut":
            self.size = _map_size("default")  # type: ignore[call-arg]
        if kind == "BuggyInit":
            self.size = len(5)  # type: ignore[arg-type]
        if kind == "GraphObs":
            self.observation_space = gym.spaces.Graph(gym.spaces.Box(0, 1, (2,)), None)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), (None if self.kind == "ResetInfoNone" else {})

    def step(self, action: Any) -> Any:  # noqa: D102
        self.t += 1
        if self.kind == "StepNone":
            return None
        if self.kind == "BuggyStep":
            first, second = self._lookup()  # the env's own bug: a TypeError "cannot unpack non-iterable NoneType"
        info: Any = {}
        if self.t >= 2 and self.kind in ("InfoList", "InfoNone"):
            info = [] if self.kind == "InfoList" else None
        if self.kind == "InfoUnpicklable":
            info = {"callback": lambda: None}
        return self._obs(), 1.0, self.t >= 5, False, info

    def _lookup(self) -> Any:
        return None

    def _obs(self) -> Any:
        if self.kind == "DiscreteOut":
            return 7 if self.t == 3 else 1 + self.t % 4
        if self.kind == "MultiDiscreteOut":
            return np.array([-3, 5]) if self.t == 3 else np.array([self.t % 3 - 1, 5 + self.t % 2])
        return self.np_random.uniform(-1, 1, 3).astype(np.float32)

    def render(self) -> Any:  # noqa: D102
        if self.kind != "RenderCloseRaises":
            return super().render()
        return np.zeros((16, 16, 3), np.uint8)

    def close(self) -> None:  # noqa: D102
        if self.kind in ("CloseRaises", "RenderCloseRaises"):
            CLOSED[0] += 1
            raise RuntimeError("the simulator's licence server is gone")


for _kind in ("HelperArgLeftOut", "BuggyStep", "StepNone", "InfoUnpicklable", "RenderCloseRaises", "MultiDiscreteOut", "DiscreteOut", "BuggyInit", "GraphObs", "NoRenderModes", "CloseRaises", "InfoList", "InfoNone", "ResetInfoNone"):
    if f"{_kind}-v0" not in gym.registry:
        gym.register(f"{_kind}-v0", entry_point=Odd, kwargs={"kind": _kind}, max_episode_steps=50)


@canter.register("env", "OddSizedFactory-v0")
def odd_sized_factory(size: int) -> gym.Env:
    """An :class:`Odd` env from a factory with a required argument, ``size``."""
    return Odd()


@canter.register("env", "OddFactory-v0")
def odd_factory(kind: str = "Plain") -> gym.Env:
    """An :class:`Odd` env of ``kind``, made without gymnasium.make (no passive env checker)."""
    return Odd(kind)


def same_step_vector(num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> gym.vector.VectorEnv:
    """``num_envs`` Odd copies in a vector env that autoresets in SAME_STEP mode."""
    return gym.vector.SyncVectorEnv([lambda: Odd(**kwargs)] * num_envs,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)


if "SameStepVec-v0" not in gym.registry:
    gym.register("SameStepVec-v0", entry_point=Odd, vector_entry_point=same_step_vector, max_episode_steps=50)


class NeedsSize(Odd):
    """An Odd env whose constructor requires ``size`` (``NeedsSize-v0``)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size


if "NeedsSize-v0" not in gym.registry:
    gym.register("NeedsSize-v0", entry_point=NeedsSize, max_episode_steps=50)
