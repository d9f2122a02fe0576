"""Toy envs with invalid-action masks for tests: ``masked_env:MaskedPick-v0`` (and ``FactoredPick-v0``, its
MultiDiscrete / MultiBinary kin, below).

Each step shows a target among ``n`` actions (one-hot, or its index with ``discrete_obs=True``)
and an ``action_mask`` allowing the target and 1-3 random others. Picking the target earns 1,
another allowed action 0; a disallowed action raises (``strict``, the default), so a run that
ever ignores the mask, while exploring or evaluating, fails. Episodes last ``horizon`` steps
(terminated). Uniform play over the allowed actions earns about 3.6 per episode of 10 steps.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class MaskedPick(gym.Env):
    """Pick the shown target; the mask allows it and a few others."""

    def __init__(self, n: int = 6, horizon: int = 10, strict: bool = True, discrete_obs: bool = False,
                 render_mode: str | None = None) -> None:
        self.n, self.horizon, self.strict = n, horizon, strict
        obs = gym.spaces.Discrete(n) if discrete_obs else gym.spaces.Box(0.0, 1.0, (n,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": obs, "action_mask": gym.spaces.MultiBinary(n)})
        self.action_space = gym.spaces.Discrete(n)
        self.discrete_obs = discrete_obs
        self.render_mode = render_mode
        self.disallowed = 0  # disallowed actions taken (only without strict)

    def _draw(self) -> dict[str, Any]:
        self.target = int(self.np_random.integers(self.n))
        mask = np.zeros(self.n, np.int8)
        mask[self.np_random.choice(self.n, size=int(self.np_random.integers(2, 5)), replace=False)] = 1
        mask[self.target] = 1
        self.mask = mask
        obs = self.target if self.discrete_obs else np.eye(self.n, dtype=np.float32)[self.target]
        return {"observation": obs, "action_mask": mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._draw(), {}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict]:  # noqa: D102
        a = int(action)
        if not self.mask[a]:
            if self.strict:
                raise ValueError(f"action {a} is masked (allowed: {np.flatnonzero(self.mask).tolist()})")
            self.disallowed += 1
        reward = 1.0 if a == self.target else 0.0
        self.t += 1
        return self._draw(), reward, self.t >= self.horizon, False, {}

    def render(self) -> np.ndarray | None:  # noqa: D102
        return np.zeros((8, 8, 3), np.uint8) if self.render_mode == "rgb_array" else None


if "MaskedPick-v0" not in gym.registry:
    gym.register("MaskedPick-v0", entry_point=MaskedPick, disable_env_checker=True)
if "TaxiMasked-v4" not in gym.registry:  # gymnasium's Taxi, whose info carries the action mask
    from canter.envs.masks import InfoActionMask

    gym.register("TaxiMasked-v4", entry_point=lambda **kw: InfoActionMask(gym.make("Taxi-v4", **kw)),
                 disable_env_checker=True)


class MethodPick(MaskedPick):
    """MaskedPick as sb3-contrib's MaskablePPO takes it: a plain Box observation and the mask from an
    ``action_masks()`` method (bools); registered as ``MethodPick-v0`` wrapped in MethodActionMask."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.observation_space = self.observation_space["observation"]

    def _draw(self) -> Any:  # noqa: D102
        return super()._draw()["observation"]

    def action_masks(self) -> np.ndarray:
        """Which actions are allowed now."""
        return self.mask.astype(bool)


if "MethodPick-v0" not in gym.registry:
    from canter.envs.masks import MethodActionMask

    gym.register("MethodPick-v0", entry_point=lambda **kw: MethodActionMask(MethodPick(**kw)), disable_env_checker=True)


class DictPick(gym.Env):
    """Structured observations: ``{"target": Discrete(n), "noise": Box(2), "flags": MultiBinary(2)}``
    (``tuple_obs=True``: the same three as a Tuple; ``image=True``: an image entry too). Picking the
    target earns 1; 10 steps per episode."""

    def __init__(self, n: int = 4, tuple_obs: bool = False, image: bool = False, masked: bool = False,
                 render_mode: str | None = None) -> None:
        self.n, self.tuple_obs, self.masked, self.render_mode = n, tuple_obs, masked, render_mode
        parts = {"target": gym.spaces.Discrete(n), "noise": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
                 "flags": gym.spaces.MultiBinary(2)}
        if image:
            parts["frame"] = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
        if masked:
            parts["action_mask"] = gym.spaces.MultiBinary(n)
        self.observation_space = gym.spaces.Tuple(tuple(parts.values())) if tuple_obs else gym.spaces.Dict(parts)
        self.action_space = gym.spaces.Discrete(n)

    def _obs(self) -> Any:
        self.target = int(self.np_random.integers(self.n))
        parts = {"target": self.target, "noise": self.np_random.uniform(-1, 1, 2).astype(np.float32),
                 "flags": self.np_random.integers(0, 2, 2).astype(np.int8)}
        if self.masked:
            mask = np.zeros(self.n, np.int8)
            mask[[self.target, (self.target + 1) % self.n]] = 1
            self.mask = mask
            parts["action_mask"] = mask
        return tuple(parts.values()) if self.tuple_obs else parts

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:  # noqa: D102
        if self.masked and not self.mask[int(action)]:
            raise ValueError(f"action {action} is masked")
        reward = float(int(action) == self.target)
        self.t += 1
        return self._obs(), reward, self.t >= 10, False, {}


if "DictPick-v0" not in gym.registry:
    gym.register("DictPick-v0", entry_point=DictPick, disable_env_checker=True)



class FactoredPick(gym.Env):
    """MaskedPick for factored actions: ``MultiDiscrete(nvec)``, or ``MultiBinary(len(nvec))`` with
    ``binary=True``. Each step shows a target per sub-action (one-hot, concatenated) and a mask in
    sb3-contrib's layout (``sum(nvec)`` entries; ``2 * n`` for MultiBinary, "0 allowed" then "1 allowed"
    per entry) allowing each target and, each with probability 1/2, the other choices. Each matched
    sub-action earns ``1 / k``; a masked one raises (``strict``), else is counted in ``disallowed``.
    The mask comes with the observation (``source="obs"``, a ``Dict``), in ``info`` (``"info"``) or
    from ``action_masks()`` (``"method"``); ``extra`` appends that many entries to it (drops them
    where negative: a mask of the wrong length). ``start``: the MultiDiscrete's first action of each entry. 10 steps per episode."""

    def __init__(self, nvec: tuple[int, ...] = (3, 4, 2), binary: bool = False, source: str = "obs",
                 strict: bool = True, extra: int = 0, start: int = 0, render_mode: str | None = None) -> None:
        self.nvec = np.array([2] * len(nvec) if binary else nvec, np.int64)
        self.start = 0 if binary else start
        self.action_space = (gym.spaces.MultiBinary(len(nvec)) if binary
                             else gym.spaces.MultiDiscrete(self.nvec, start=[start] * len(nvec)))
        self.width, self.source, self.strict, self.extra = int(self.nvec.sum()), source, strict, extra
        self.starts = np.r_[0, np.cumsum(self.nvec)[:-1]]
        self.render_mode = render_mode
        obs = gym.spaces.Box(0.0, 1.0, (self.width,), np.float32)
        self.observation_space = (gym.spaces.Dict({"observation": obs, "action_mask": gym.spaces.MultiBinary(self.width)})
                                  if source == "obs" else obs)
        self.disallowed = 0  # masked sub-actions taken (only without strict)

    def action_masks(self) -> np.ndarray:
        """Which choices of each sub-action are allowed now (sb3-contrib's layout), with ``extra`` entries."""
        return np.r_[self.mask, np.ones(max(self.extra, 0), np.int8)][:self.width + self.extra].astype(bool)

    def _draw(self) -> tuple[Any, dict]:
        self.targets = np.array([self.np_random.integers(n) for n in self.nvec])
        obs = np.zeros(self.width, np.float32)
        obs[self.starts + self.targets] = 1.0
        self.mask = (self.np_random.random(self.width) < 0.5).astype(np.int8)
        self.mask[self.starts + self.targets] = 1
        shown = self.action_masks().astype(np.int8)
        if self.source == "obs":
            return {"observation": obs, "action_mask": shown}, {}
        return obs, ({"action_mask": shown} if self.source == "info" else {})

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:  # noqa: D102
        super().reset(seed=seed)
        self.t = 0
        return self._draw()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:  # noqa: D102
        a = np.asarray(action, np.int64).reshape(-1) - self.start
        bad = ~self.mask[self.starts + a].astype(bool)
        if bad.any():
            if self.strict:
                raise ValueError(f"action {a.tolist()} is masked (mask {self.mask.tolist()})")
            self.disallowed += int(bad.sum())
        reward = float((a == self.targets).mean())
        self.t += 1
        obs, info = self._draw()
        return obs, reward, self.t >= 10, False, info


if "FactoredPick-v0" not in gym.registry:
    from canter.envs.masks import InfoActionMask, MethodActionMask

    gym.register("FactoredPick-v0", entry_point=FactoredPick, disable_env_checker=True)
    gym.register("FactoredPickInfo-v0", disable_env_checker=True,
                 entry_point=lambda **kw: InfoActionMask(FactoredPick(source="info", **kw)))
    gym.register("FactoredPickMethod-v0", disable_env_checker=True,
                 entry_point=lambda **kw: MethodActionMask(FactoredPick(source="method", **kw)))
