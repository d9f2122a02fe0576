"""A step that both terminates and truncates (the time limit reached on the terminal step): ``collect`` and
``from_replay`` store it alike, terminated and not truncated (SB3's ``TimeLimit.truncated`` convention), since a
replay buffer keeps no separate truncation flag of a terminated transition."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import canter
from canter.data.dataset import collect, from_replay


class EndsTogether(gym.Env):
    """5-step episodes; every other one terminates on its last step as the time limit truncates it."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.t, self.episodes = 0, 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.episodes = 0, self.episodes + 1
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        end = self.t >= 5
        return np.full(1, self.t, np.float32), 1.0, end and self.episodes % 2 == 0, end, {}


if "EndsTogether-v0" not in gym.registry:
    gym.register("EndsTogether-v0", entry_point=EndsTogether, disable_env_checker=True)


def _flags(data: Any) -> set[tuple[bool, bool]]:
    """The (terminated, truncated) pairs of episode ends."""
    ends = data.terminated | data.truncated
    return set(zip(data.terminated[ends].tolist(), data.truncated[ends].tolist()))


def test_collect_and_from_replay_store_a_terminal_step_at_the_time_limit_alike(tmp_path):
    collected = collect("EndsTogether-v0", 40, seed=0)
    run = tmp_path / "dqn"
    canter.train("dqn", env="EndsTogether-v0", run_dir=run, seed=0, max_steps=60, learning_starts=30,
                 net_arch=[8], eval_every=0, eval_episodes=1, tensorboard=False, quiet=True)
    replayed = from_replay(run)
    assert _flags(collected) == _flags(replayed) == {(True, False), (False, True)}
    assert collected.episode_returns().tolist() == [5.0] * 8
