"""``canter play`` and ``--record-every`` on ale-py's native Atari env, the path a run trained with
``--vectorization auto`` / ``native`` was trained and evaluated on: the same reset (FIRE for one frame,
0 to 28 no-ops from ale-py's own generator), the same zero-padded frame stacks and the same FIRE after a
lost life as its evaluations (:mod:`canter.envs.atari`), where the wrapper path differs in all three."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs import atari
from canter.envs.vector import VecEnv


class NativePlayEnv(gym.Env):
    """One copy of ale-py's native vector env (evaluation settings) as a single gymnasium env. The native env
    cannot render, so for ``render_mode="rgb_array"`` a second native env plays the same game beside it (the
    same seed and actions, its observation the RGB screen of each step's last frame), and :meth:`render`
    returns that screen, as the wrapper path's ``AtariEnv.render`` does."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": atari.step_fps(atari.FRAME_SKIP)}

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None, render_mode: str | None = None) -> None:
        self.vec = VecEnv(atari.make_atari_vec(env_id, 1, "native", env_kwargs=env_kwargs), check_actions=True)
        skip = atari.preprocessing(env_id, env_kwargs).frame_skip  # env_kwargs' frame_skip: the game's speed
        self.metadata = {**self.metadata, "render_fps": atari.step_fps(skip)}
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self.render_mode = render_mode
        self.screen = None if render_mode is None else atari._native(env_id, 1, False, env_kwargs, screen=True)
        self.frame: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start a game (``seed``: the native env's, as an evaluation's first game with that seed)."""
        obs = self.vec.reset(seed=seed)
        if self.screen is not None:
            self.frame = self.screen.reset(seed=seed)[0][0, -1]
        return obs[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One agent step (4 frames) of both envs with ``action``."""
        actions = np.asarray([action])
        step = self.vec.step(actions)
        if self.screen is not None:
            self.frame = self.screen.step(actions)[0][0, -1]
        return step.obs[0], float(step.reward[0]), bool(step.terminated[0]), bool(step.truncated[0]), {}

    def render(self) -> np.ndarray | None:
        """The RGB screen (210x160x3) of the last frame played."""
        return self.frame

    def close(self) -> None:
        """Close both envs."""
        self.vec.close()
        if self.screen is not None:
            self.screen.close()


def make_native_play_env(env_id: str, render_mode: str | None, env_kwargs: dict[str, Any] | None) -> gym.Env:
    """:class:`NativePlayEnv`; ``render_mode="human"`` shows its frames in a window (gymnasium's ``HumanRendering``,
    which needs pygame)."""
    if render_mode == "human":
        return gym.wrappers.HumanRendering(NativePlayEnv(env_id, env_kwargs, "rgb_array"))
    return NativePlayEnv(env_id, env_kwargs, render_mode)
