"""Goal-conditioned envs: their layout after flattening, and a bit-flipping task for hindsight replay.

A goal env (gymnasium-robotics' ``GoalEnv`` API, which Stable-Baselines3's ``HerReplayBuffer``
takes) observes a ``Dict`` with ``observation``, ``achieved_goal`` and ``desired_goal`` entries and
offers ``compute_reward(achieved_goal, desired_goal, info)`` (and optionally
``compute_terminated``) on batches. canter flattens the ``Dict`` into one vector
(:mod:`canter.envs.packing`); :class:`GoalLayout` finds the goals' columns in it.

``BitFlipping-v0`` is the task of the hindsight experience replay paper (Andrychowicz et al. 2017,
section 3.1): ``n_bits`` bits (default 10), each action flips one, reward -1 per step until the
state equals a random target (then 0 and the episode ends), at most ``n_bits`` steps. Random play
almost never meets the target, so without hindsight relabelling DQN sees no reward signal.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from canter.envs.masks import MASK_KEY
from canter.envs.packing import PackObservations
from canter.envs.spaces import describe_space
from canter.errors import CanterError
from canter.registry import register
from canter.utils import wrapper_method

GOAL_KEYS = ("achieved_goal", "desired_goal")


def is_goal_space(space: gym.Space) -> bool:
    """True for a ``Dict`` observation space with ``achieved_goal`` and ``desired_goal`` entries."""
    return isinstance(space, gym.spaces.Dict) and all(k in space.spaces for k in GOAL_KEYS)


class GoalLayout:
    """Where a goal env's goals sit in its flattened observation vector, and its reward function.

    Built from one env instance made as the run's envs are (:func:`canter.envs.make_env`): the
    ``Dict`` space comes from the :class:`~canter.envs.packing.PackObservations` wrapper that
    flattens it, ``compute_reward`` / ``compute_terminated`` from the env (through its wrappers).
    """

    def __init__(self, env: gym.Env, env_id: str) -> None:
        space = _packed_space(env)
        if space is None or not is_goal_space(space):
            raise CanterError(f"her_goals needs a goal env (Dict observations with 'achieved_goal' and 'desired_goal' "
                              f"entries and compute_reward), but '{env_id}' observes {describe_space(space or env.observation_space)}")
        self.columns: dict[str, slice] = {}
        start = 0
        for key, sub in space.spaces.items():  # gymnasium flattens a Dict entry by entry, in this order
            if key == MASK_KEY:  # an action mask is packed after everything else (canter.envs.packing)
                continue
            width = gym.spaces.flatdim(sub)
            self.columns[key] = slice(start, start + width)
            start += width
        achieved, desired = space["achieved_goal"], space["desired_goal"]
        vector_goals = all(isinstance(g, (gym.spaces.Box, gym.spaces.MultiBinary)) for g in (achieved, desired))
        #: Discrete / MultiDiscrete goals (one space for both): each entry's size and first value, flattened
        #: one-hot entry by entry (gymnasium's flatten, as the observation encoder takes them); None for vectors
        self.categories: tuple[np.ndarray, np.ndarray] | None = _categories(desired) if achieved == desired else None
        if not (vector_goals and achieved.shape == desired.shape) and self.categories is None:
            raise CanterError(f"her_goals needs Box (or MultiBinary) goals of one shape, or Discrete (or MultiDiscrete) "
                              f"goals of one space; '{env_id}' has achieved_goal {achieved} and desired_goal {desired}")
        self.goal_shape, self.goal_dtype = tuple(desired.shape), desired.dtype
        #: a goal inside the desired-goal space (0 where its bounds allow it), for trying the env's functions once
        low, high = (np.broadcast_to(getattr(desired, k, v), desired.shape) for k, v in (("low", 0), ("high", 1)))
        first = self.categories[1].reshape(self.goal_shape) if self.categories is not None else 0
        self.goal_example = (first + np.clip(np.zeros(self.goal_shape), low, high)).astype(self.goal_dtype)
        self.compute_reward: Callable[..., Any] = _env_method(env, "compute_reward", env_id)
        try:
            self.compute_terminated: Callable[..., Any] | None = env.get_wrapper_attr("compute_terminated")
        except AttributeError:
            self.compute_terminated = None
        #: the step-info keys the two functions read (set by :func:`canter.data.her.check_goal_functions`):
        #: the replay buffer keeps these entries of each transition's info to give them back when relabelling
        self.info_keys: tuple[str, ...] = ()

    def goals(self, obs: np.ndarray, key: str) -> np.ndarray:
        """The ``key`` goals of flat observations ``obs`` ``[B, dim]``, in the env's shape ``[B, *goal_shape]``
        (Discrete / MultiDiscrete goals as the env's integers, read from their one-hot columns)."""
        cols = obs[:, self.columns[key]]
        if self.categories is not None:
            sizes, first = self.categories
            cols = np.stack([part.argmax(1) for part in np.split(cols, np.cumsum(sizes)[:-1], axis=1)], 1) + first
        return cols.reshape((len(obs),) + self.goal_shape).astype(self.goal_dtype, copy=False)

    def set_desired(self, obs: np.ndarray, goals: np.ndarray) -> None:
        """Write ``goals`` ``[B, *goal_shape]`` into the desired-goal columns of ``obs`` (in place; Discrete /
        MultiDiscrete goals one-hot, entry by entry)."""
        goals = goals.reshape(len(goals), -1)
        if self.categories is not None:
            sizes, first = self.categories
            hot = np.zeros((len(goals), int(sizes.sum())), obs.dtype)
            hot[np.arange(len(goals))[:, None], np.cumsum(sizes) - sizes + (goals - first)] = 1
            goals = hot
        obs[:, self.columns["desired_goal"]] = goals


def _categories(space: gym.Space) -> tuple[np.ndarray, np.ndarray] | None:
    """``(sizes, first values)`` of the entries of a Discrete or MultiDiscrete ``space``, flattened; else None."""
    if isinstance(space, gym.spaces.Discrete):
        return np.array([space.n], np.int64), np.array([space.start], np.int64)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.nvec.astype(np.int64).ravel(), space.start.astype(np.int64).ravel()
    return None


def _packed_space(env: gym.Env) -> gym.Space | None:
    """The structured space that ``env``'s :class:`PackObservations` wrapper flattens (None without one)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, PackObservations):
            return env.env.observation_space
        env = env.env
    return None


def _env_method(env: gym.Env, name: str, env_id: str) -> Callable[..., Any]:
    method = wrapper_method(env, name)
    if method is None:
        raise CanterError(f"her_goals needs the env's {name}(achieved_goal, desired_goal, info); '{env_id}' has none")
    return method


class BitFlippingEnv(gym.Env):
    """Flip bits until the state equals the target: see the module docstring."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(self, n_bits: int = 10, max_steps: int | None = None, render_mode: str | None = None) -> None:
        for name, value in (("n_bits", n_bits), ("max_steps", n_bits if max_steps is None else max_steps)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise CanterError(f"BitFlipping-v0 needs {name} to be an integer >= 1, got {value!r}")
        self.n_bits, self.max_steps = int(n_bits), int(n_bits if max_steps is None else max_steps)
        self.render_mode = render_mode
        bits = gym.spaces.MultiBinary(self.n_bits)
        self.observation_space = gym.spaces.Dict({"observation": bits, "achieved_goal": bits, "desired_goal": bits})
        self.action_space = gym.spaces.Discrete(self.n_bits)
        self.state = np.zeros(self.n_bits, np.int8)
        self.goal = np.zeros(self.n_bits, np.int8)
        self.steps = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.state.copy(), "achieved_goal": self.state.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """A random state and a different random target."""
        super().reset(seed=seed)
        self.state = self.np_random.integers(0, 2, self.n_bits).astype(np.int8)
        self.goal = self.state
        while np.array_equal(self.goal, self.state):
            self.goal = self.np_random.integers(0, 2, self.n_bits).astype(np.int8)
        self.steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Flip bit ``action``."""
        self.state[int(action)] ^= 1
        self.steps += 1
        success = bool(np.array_equal(self.state, self.goal))
        reward = float(self.compute_reward(self.state, self.goal, {}))
        return self._obs(), reward, success, self.steps >= self.max_steps and not success, {"is_success": success}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        """0 where the achieved goal equals the desired one, else -1 (on batches ``[..., n_bits]`` too)."""
        return -np.any(np.asarray(achieved_goal) != np.asarray(desired_goal), axis=-1).astype(np.float32)

    def compute_terminated(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        """An episode ends when the goal is reached."""
        return np.all(np.asarray(achieved_goal) == np.asarray(desired_goal), axis=-1)

    def render(self) -> str | None:  # noqa: D102
        return f"state {''.join(map(str, self.state))} goal {''.join(map(str, self.goal))}"


@register("env", "BitFlipping-v0")
def bit_flipping(n_bits: int = 10, max_steps: int | None = None, render_mode: str | None = None) -> gym.Env:
    """The bit-flipping goal task (``n_bits``, default 10; ``max_steps``, default ``n_bits``). Its parameters
    are named here, so that a misspelled ``env_kwargs`` key is answered with the closest one."""
    return BitFlippingEnv(n_bits=n_bits, max_steps=max_steps, render_mode=render_mode)
