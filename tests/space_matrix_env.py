"""One env of many spaces for the space-matrix tests: ``space_matrix_env:SpaceMatrix-v0`` with
``obs=NAME, act=NAME`` keyword arguments naming entries of :data:`OBS_SPACES` and :data:`ACT_SPACES`.

``step`` raises for an action that its action space does not contain (a NumPy array of the space's shape and
dtype for a Box; an int for a Discrete), so every action the agent takes is checked env-side. The reward is 1
when the action's first entry is odd exactly when the observation's first entry is positive, else 0;
16 steps per episode.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def _box(dtype: Any, shape: tuple[int, ...] = (3,), low: float = -1.0, high: float = 1.0) -> spaces.Box:
    return spaces.Box(low, high, shape, dtype)


#: observation spaces by name
OBS_SPACES: dict[str, Any] = {
    "box_f32": lambda: _box(np.float32),
    "box_f64": lambda: _box(np.float64),
    "box_f16": lambda: _box(np.float16),
    "box_i32": lambda: _box(np.int32, low=-5, high=5),
    "box_u8": lambda: _box(np.uint8, low=0, high=255),
    "box_2x3": lambda: _box(np.float32, (2, 3)),
    "discrete": lambda: spaces.Discrete(5),
    "discrete_start": lambda: spaces.Discrete(5, start=-2),
    "multidiscrete": lambda: spaces.MultiDiscrete([3, 4, 2]),
    "multibinary": lambda: spaces.MultiBinary(4),
    "tuple": lambda: spaces.Tuple((spaces.Discrete(3), _box(np.float32, (2,)))),
    "nested_dict": lambda: spaces.Dict({"a": _box(np.float32, (2,)), "inner": spaces.Dict(
        {"k": spaces.Discrete(4), "v": _box(np.float32, (3,))})}),
    "box_inf": lambda: spaces.Box(-np.inf, np.inf, (3,), np.float32),
    "box_huge": lambda: spaces.Box(-1e30, 1e30, (3,), np.float32),
}

#: action spaces by name
ACT_SPACES: dict[str, Any] = {
    "discrete": lambda: spaces.Discrete(3),
    "discrete_start": lambda: spaces.Discrete(3, start=3),
    "multidiscrete": lambda: spaces.MultiDiscrete([2, 5, 3]),
    "multidiscrete_2x2": lambda: spaces.MultiDiscrete(np.array([[2, 3], [4, 2]])),
    "multibinary": lambda: spaces.MultiBinary(3),
    "box": lambda: spaces.Box(-1.0, 1.0, (2,), np.float32),
    "box_f64_asym": lambda: spaces.Box(np.array([-3.0, 0.0]), np.array([1.0, 10.0]), dtype=np.float64),
    "box_inf": lambda: spaces.Box(-np.inf, np.inf, (2,), np.float32),
    "box_2x2": lambda: spaces.Box(-1.0, 1.0, (2, 2), np.float32),
    "box_int": lambda: spaces.Box(-3, 3, (2,), np.int64),
}


def _first(x: Any) -> float:
    """The first number in a (nested) observation or action."""
    if isinstance(x, dict):
        return _first(next(iter(x.values())))
    if isinstance(x, tuple):
        return _first(x[0])
    return float(np.asarray(x).reshape(-1)[0])


class SpaceMatrix(gym.Env):
    """Random observations of ``OBS_SPACES[obs]``; actions of ``ACT_SPACES[act]``, checked each step."""

    metadata = {"render_modes": []}

    def __init__(self, obs: str = "box_f32", act: str = "discrete", render_mode: str | None = None) -> None:
        self.observation_space = OBS_SPACES[obs]()
        self.action_space = ACT_SPACES[act]()
        self.render_mode = render_mode
        self.t = 0
        self.actions: list[Any] = []

    def _obs(self) -> Any:
        space = self.observation_space
        if isinstance(space, spaces.Box) and not np.all(np.isfinite(space.low)) or (
                isinstance(space, spaces.Box) and float(space.high.max()) > 1e6):
            return self.np_random.normal(0, 100, space.shape).astype(space.dtype)
        return space.sample()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        """A random observation."""
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        self.last = self._obs()
        return self.last, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """Raises ValueError for an action outside the action space."""
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            ok = isinstance(action, (int, np.integer)) or (isinstance(action, np.ndarray) and action.shape == ()
                                                           and np.issubdtype(action.dtype, np.integer))
        else:
            # a NumPy scalar for a Box of shape (): gymnasium's vector envs hand each env one as well
            ok = isinstance(action, (np.ndarray, np.generic)) and action.shape == space.shape and \
                action.dtype == space.dtype
        if not (ok and space.contains(action)):
            raise ValueError(f"action {action!r} ({type(action).__name__}) is not in {space}")
        self.actions.append(action)
        reward = float((int(_first(action)) % 2 == 1) == (_first(self.last) > 0))
        self.t += 1
        self.last = self._obs()
        return self.last, reward, False, self.t >= 16, {}


if "SpaceMatrix-v0" not in gym.registry:
    gym.register("SpaceMatrix-v0", entry_point=SpaceMatrix, disable_env_checker=True)
