"""The off-policy trainer: act, store in a replay buffer, take gradient steps at a set ratio."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.agents.agent import Agent
from canter.data.replay import ReplayBuffer
from canter.trainers.base import Trainer


def random_actions(agent: Agent, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random actions for warm-up: ``(env_actions, algorithm_actions)`` for ``n`` envs.

    Squashed Box actions are drawn in [-1, 1] (algorithm space) and rescaled for the env.
    """
    space = agent.action_space
    if isinstance(space, gym.spaces.Discrete):
        a = rng.integers(0, space.n, size=n)
        return a + int(space.start), a
    if agent.algorithm.squashed_actions:
        a = rng.uniform(-1.0, 1.0, size=(n,) + space.shape).astype(np.float32)
        return agent.to_env_actions(torch.from_numpy(a)), a
    a = np.stack([rng.uniform(space.low, space.high) for _ in range(n)]).astype(np.float32)
    return a, a


class OffPolicyTrainer(Trainer):
    """Each iteration collects ``train_freq`` env steps, then takes ``gradient_steps`` updates.

    Before ``learning_starts`` env steps, actions are uniform random. Only real transitions
    (``Step.valid``) enter the buffer; the stored next observation of an episode's last step is
    its real final observation, so truncated episodes bootstrap correctly.
    """

    def make_buffer(self) -> ReplayBuffer:
        """Build the replay buffer (override for prioritized / n-step buffers)."""
        obs_space, act_space = self.agent.observation_space, self.agent.action_space
        discrete = isinstance(act_space, gym.spaces.Discrete)
        return ReplayBuffer(
            self.config.buffer_size, obs_space.shape, () if discrete else act_space.shape,
            obs_dtype=obs_space.dtype, act_dtype=np.int64 if discrete else np.float32,
            gamma=self.config.gamma, seed=self.run.seed,
        )

    def setup(self) -> None:  # noqa: D102
        self.buffer = self.make_buffer()
        self.rng = np.random.default_rng(self.run.seed + 1)
        self.vec_steps = max(1, math.ceil(self.config.train_freq / self.env.num_envs))

    def resume_state(self) -> dict[str, Any]:
        """Adds the replay buffer and the warm-up action generator."""
        return {**super().resume_state(), "buffer": self.buffer.state_dict(),
                "warmup_rng": self.rng.bit_generator.state}

    def load_resume_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_resume_state(state)
        self.buffer.load_state_dict(state["buffer"])
        self.rng.bit_generator.state = state["warmup_rng"]

    def _random_actions(self) -> tuple[np.ndarray, np.ndarray]:
        return random_actions(self.agent, self.env.num_envs, self.rng)

    def iteration(self) -> dict[str, float]:
        """``train_freq`` env steps of collection, then the gradient steps."""
        agent, env, buf, c = self.agent, self.env, self.buffer, self.config
        obs = self.obs
        n = env.num_envs
        for _ in range(self.vec_steps):
            self.set_progress()
            if self.step < c.learning_starts:
                env_actions, actions = self._random_actions()
            else:
                env_actions, _, out = agent.sample(obs)
                actions = out.actions.numpy()
            step = env.step(env_actions)
            self.step += n
            self.guard.check_env_data(step.obs, step.reward)
            done = step.terminated | step.truncated
            reward = agent.scale_reward(step.reward, done)
            buf.add(obs, actions, reward, step.obs, step.terminated, step.valid)
            self.record_episodes()
            obs = step.obs
        self.obs = obs
        if self.step < c.learning_starts or len(buf) == 0:
            return {}
        return self.train(c.gradient_steps)

    def train(self, gradient_steps: int) -> dict[str, float]:
        """Advance the schedules to the current step, then take ``gradient_steps`` updates; mean stats."""
        agent, buf, c = self.agent, self.buffer, self.config
        self.set_progress()
        totals: dict[str, float] = {}
        for _ in range(gradient_steps):
            batch = agent.prepare_replay_batch(buf.sample(c.batch_size))
            stats = agent.learn(batch)
            update = getattr(buf, "update_priorities", None)
            if update is not None and self.algorithm.last_priorities is not None:
                update(batch.indices, self.algorithm.last_priorities)
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + v
        return {k: v / gradient_steps for k, v in totals.items()}
