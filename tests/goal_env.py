"""A continuous goal env for hindsight replay tests: move a point onto a random target.

``PointGoal-v0``: position and target in [-1, 1]^2, actions in [-1, 1]^2 move the point by 0.1
times the action, reward -1 per step until the point is within 0.1 of the target (0 there);
episodes never terminate and end after 20 steps (as gymnasium-robotics' FetchReach: reaching the
goal does not end them). ``is_success`` is reported at every step.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


RADIUS = 0.1


class PointGoalEnv(gym.Env):
    """See the module docstring."""

    def __init__(self, steps: int = 20, render_mode: str | None = None) -> None:
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.steps, self.render_mode = steps, render_mode
        self.pos = np.zeros(2, np.float32)
        self.goal = np.zeros(2, np.float32)
        self.t = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.pos = np.clip(self.pos + 0.1 * np.clip(action, -1, 1), -1, 1).astype(np.float32)
        self.t += 1
        reward = float(self.compute_reward(self.pos, self.goal, {}))
        return self._obs(), reward, False, self.t >= self.steps, {"is_success": reward == 0.0}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        dist = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)
        return -(dist > RADIUS).astype(np.float32)


if "PointGoal-v0" not in gym.registry:
    gym.register("PointGoal-v0", entry_point=PointGoalEnv, disable_env_checker=True)


class PenaltyPointEnv(PointGoalEnv):
    """PointGoal whose reward reads its step info: ``penalty`` (-0.01 times the step's number ``t`` in its
    episode, reported every step; read with ``info.get``, so that a missing entry is silently 0) and 1 more
    where the info has a ``bonus`` entry (reported on an episode's last step only). Episodes last ``steps``
    plus a random ``0..vary`` steps (so that the sub-envs of a vector env end at different steps). The
    observation entry is ``(t, episode length)``, so a transition's next observation names the step whose
    info its reward needs."""

    def __init__(self, steps: int = 20, vary: int = 0, render_mode: str | None = None) -> None:
        super().__init__(steps, render_mode)
        self.base_steps, self.vary = steps, vary

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        self.steps = self.base_steps + int(self.np_random.integers(0, self.vary + 1))
        return self._obs(), info

    def _obs(self) -> dict[str, np.ndarray]:
        return {**super()._obs(), "observation": np.array([self.t, self.steps], np.float32)}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.pos = np.clip(self.pos + 0.1 * np.clip(action, -1, 1), -1, 1).astype(np.float32)
        self.t += 1
        truncated = self.t >= self.steps
        info = {"is_success": bool(np.linalg.norm(self.pos - self.goal) <= RADIUS), "penalty": -0.01 * self.t}
        if truncated:
            info["bonus"] = 1.0
        reward = float(self.compute_reward(self.pos[None], self.goal[None], [info])[0])
        return self._obs(), reward, False, truncated, info

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        extra = np.array([i.get("penalty", 0.0) + ("bonus" in i) for i in info], np.float32)
        return super().compute_reward(achieved_goal, desired_goal, info) + extra


if "PenaltyPoint-v0" not in gym.registry:
    gym.register("PenaltyPoint-v0", entry_point=PenaltyPointEnv, disable_env_checker=True)


class LineGoalEnv(gym.Env):
    """Walk along a line of ``n`` cells (numbered from ``start``) to a random target cell: ``Discrete`` goals (a
    ``MultiDiscrete([n])`` goal with ``multi``), actions 0 left and 1 right, reward -1 per step until the target
    (0 there, the episode ends), at most ``2 n`` steps."""

    def __init__(self, n: int = 5, start: int = 0, multi: bool = False, render_mode: str | None = None) -> None:
        self.n, self.start, self.multi, self.render_mode = n, start, multi, render_mode
        goal = gym.spaces.MultiDiscrete([n], start=[start]) if multi else gym.spaces.Discrete(n, start=start)
        self.observation_space = gym.spaces.Dict({"observation": gym.spaces.Discrete(2 * n + 1), "achieved_goal": goal,
                                                  "desired_goal": goal})
        self.action_space = gym.spaces.Discrete(2)
        self.pos = self.goal = self.t = 0

    def _goal(self, cell: int) -> Any:
        return np.array([cell + self.start]) if self.multi else cell + self.start

    def _obs(self) -> dict[str, Any]:
        return {"observation": self.t, "achieved_goal": self._goal(self.pos), "desired_goal": self._goal(self.goal)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.pos, self.goal = (int(c) for c in self.np_random.choice(self.n, 2, replace=False))
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.pos = min(max(self.pos + (1 if int(action) else -1), 0), self.n - 1)
        self.t += 1
        reward = float(self.compute_reward(self._goal(self.pos), self._goal(self.goal), {}))
        return self._obs(), reward, reward == 0.0, self.t >= 2 * self.n, {"is_success": reward == 0.0}

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        differ = np.asarray(achieved_goal) != np.asarray(desired_goal)
        return -(differ.any(-1) if self.multi else differ).astype(np.float32)


if "LineGoal-v0" not in gym.registry:
    gym.register("LineGoal-v0", entry_point=LineGoalEnv, disable_env_checker=True)


class StillGoalEnv(gym.Env):
    """A goal env whose observations never change (zeros; -1 per step, 8 steps an episode) and whose state a checkpoint
    does not keep (``resume_problem``): a resumed run starts fresh episodes whose first observation equals the
    running ones'."""

    resume_problem = "StillGoal-v0's state is not saved (a test env)"

    def __init__(self, render_mode: str | None = None) -> None:
        box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Discrete(2)
        self.render_mode, self.t = render_mode, 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {key: np.zeros(2, np.float32) for key in ("observation", "achieved_goal", "desired_goal")}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs(), -1.0, False, self.t >= 8, {}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        return -np.ones(len(np.atleast_2d(achieved_goal)), np.float32)


if "StillGoal-v0" not in gym.registry:
    gym.register("StillGoal-v0", entry_point=StillGoalEnv, disable_env_checker=True)
