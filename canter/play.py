"""Play a trained agent: render it in a window or record videos."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

import gymnasium as gym

from canter.envs import make_env
from canter.errors import CanterError, require


def make_render_env(env_id: str, mode: str | None, seed: int = 0, env_kwargs: dict[str, Any] | None = None) -> gym.Env:
    """``make_env`` with ``render_mode=mode``, checked by rendering one frame (CanterError if it cannot)."""
    if mode == "rgb_array" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # off-screen frames need no display (quiets SDL)
    env = make_env(env_id, render_mode=mode, **(env_kwargs or {}))
    if mode is not None:
        try:
            env.reset(seed=seed)
            env.render()
        except gym.error.DependencyNotInstalled as exc:
            env.close()
            raise CanterError(f"rendering '{env_id}' needs pygame: pip install 'canter[video]' ({exc})") from None
    return env


def play(agent: Any, env_id: str, episodes: int = 1, render: bool = False, video_dir: str | None = None,
         seed: int = 0, env_kwargs: dict[str, Any] | None = None) -> list[float]:
    """Run ``episodes`` episodes with ``agent.predict``; returns the episode returns."""
    mode = "rgb_array" if video_dir else ("human" if render else None)
    env = make_render_env(env_id, mode, seed, env_kwargs)
    if video_dir:
        require("moviepy", "video", "--video-dir")
        from gymnasium.wrappers import RecordVideo

        env = RecordVideo(env, video_dir, episode_trigger=lambda _: True, name_prefix="play", disable_logger=True)
    returns = []
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            done, total = False, 0.0
            while not done:
                action = agent.predict(np.asarray(obs)[None])[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns
