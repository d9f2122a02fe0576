"""Bytes per stored step of each buffer for a Dict observation of a 36 x 36 x 3 uint8 image and 3 floats.

Builds each trainer canter makes for the env (PPO's rollout, A2C's rollout, ACER's segment replay, DQN's
replay) and prints the bytes its buffer holds per stored step (one env's step; ACER's
segments add the observation after their last step). Run with
``python benchmarks/pixel_memory.py`` (a few seconds on a CPU; nothing is trained).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch


class ImageAndFloats(gym.Env):
    """``{"image": Box(0, 255, (36, 36, 3), uint8), "v": Box(-1, 1, (3,), float32)}`` observations."""

    def __init__(self, render_mode: str | None = None) -> None:
        self.observation_space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (36, 36, 3), np.uint8),
                                                  "v": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)})
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.observation_space.sample(), 0.0, False, False, {}


def nbytes(store: Any) -> int:
    """Bytes of the arrays and tensors a buffer holds (its attributes)."""
    total = 0
    for value in vars(store).values():
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
        elif isinstance(value, np.ndarray) and value.base is None:  # numpy views of the tensors are not counted
            total += value.nbytes
    return total


def main() -> None:
    """Print each buffer's bytes per stored row."""
    from canter.api import make_trainer

    gym.register("PixelMemory-v0", entry_point=ImageAndFloats, max_episode_steps=100)
    for algo, sets in (("ppo", ["n_steps=64"]), ("a2c", ["n_steps=64"]), ("acer", ["n_steps=16", "buffer_size=2048"]),
                       ("dqn", ["buffer_size=2048"])):
        trainer = make_trainer(algo, "PixelMemory-v0", n_envs=2, sets=sets, eval_episodes=0)
        trainer.setup()
        store = trainer.replay if hasattr(trainer, "replay") else trainer.buffer
        rows = store.n_envs * (store.capacity * store.n_steps if algo == "acer"  # (each segment's next obs included)
                                else store.n_steps if algo in ("ppo", "a2c") else store.length)
        print(f"{algo:5s} {type(store).__name__:28s} {nbytes(store) / rows:9,.0f} bytes a step "
              f"(obs {trainer.agent.observation_space})")
        trainer.env.close()


if __name__ == "__main__":
    main()
