"""The off-policy trainer: act, store in a replay buffer, take gradient steps at a set ratio."""
from __future__ import annotations

import math
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from canter.errors import CanterWarning
from canter.trainers.base import Trainer


class OffPolicyTrainer(Trainer):
    """Each iteration collects ``train_freq`` env steps, then takes ``gradient_steps`` updates.

    Before ``learning_starts`` env steps, actions are uniform random. Every vector step enters
    the buffer (reset-only steps as episode boundaries, see :class:`~canter.data.ReplayBuffer`);
    the next observation of an episode's last step is its real final observation, so truncated
    episodes bootstrap correctly.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        starts, budget = self.config.learning_starts, self.run.max_steps
        if starts >= budget:
            warnings.warn(CanterWarning(
                f"learning_starts ({starts}) >= max_steps ({budget}): the run only collects random actions and "
                f"never learns"
            ), stacklevel=2)

    def make_buffer(self) -> ReplayBuffer:
        """Build the replay buffer the config asks for (uniform or prioritized, 1- or n-step)."""
        c = self.config
        obs_space, act_space = self.agent.observation_space, self.agent.action_space
        discrete = isinstance(act_space, gym.spaces.Discrete)
        args = (c.buffer_size, obs_space.shape, () if discrete else act_space.shape)
        kwargs: dict[str, Any] = dict(
            obs_dtype=obs_space.dtype, act_dtype=np.int64 if discrete else np.float32, gamma=c.gamma,
            seed=self.run.seed, n_envs=self.env.num_envs, n_step=getattr(c, "n_step", 1),
        )
        if getattr(c, "prioritized", False):
            return PrioritizedReplayBuffer(*args, alpha=c.per_alpha, beta0=c.per_beta0, eps=c.per_eps, **kwargs)
        return ReplayBuffer(*args, **kwargs)

    def setup(self) -> None:  # noqa: D102
        self.buffer = self.make_buffer()
        self.rng = np.random.default_rng(self.run.seed + 1)
        self.vec_steps = max(1, math.ceil(self.config.train_freq / self.env.num_envs))
        self._reset_noise = getattr(self.algorithm, "reset_noise", None)
        self._buffer_progress = getattr(self.buffer, "set_progress", None)
        self._update_priorities = getattr(self.buffer, "update_priorities", None)

    def _random_actions(self) -> tuple[np.ndarray, np.ndarray]:
        space = self.agent.action_space
        n = self.env.num_envs
        if isinstance(space, gym.spaces.Discrete):
            a = self.rng.integers(0, space.n, size=n)
            return a + int(space.start), a
        if self.algorithm.squashed_actions:
            a = self.rng.uniform(-1.0, 1.0, size=(n,) + space.shape).astype(np.float32)
            return self.agent.to_env_actions(torch.from_numpy(a)), a
        a = np.stack([self.rng.uniform(space.low, space.high) for _ in range(n)]).astype(np.float32)
        return a, a

    def iteration(self) -> dict[str, float]:
        """``train_freq`` env steps of collection, then the gradient steps."""
        agent, env, buf, c = self.agent, self.env, self.buffer, self.config
        obs = self.obs
        n = env.num_envs
        for _ in range(self.vec_steps):
            self.algorithm.set_progress(self.step, self.run.max_steps)
            if self.step < c.learning_starts:
                env_actions, actions = self._random_actions()
            else:
                env_actions, _, out = agent.sample(obs)
                actions = out.actions.numpy()
            step = env.step(env_actions)
            self.step += n
            done = step.terminated | step.truncated
            reward = agent.scale_reward(step.reward, done)
            buf.add(obs, actions, reward, step.obs, step.terminated, step.valid, step.truncated)
            if self._reset_noise is not None and done.any():
                self._reset_noise(torch.from_numpy(done))
            self.record_episodes()
            obs = step.obs
        self.obs = obs
        if self.step < c.learning_starts or len(buf) == 0:
            return {}
        self.algorithm.set_progress(self.step, self.run.max_steps)
        if self._buffer_progress is not None:
            self._buffer_progress(self.step, self.run.max_steps)
        totals: dict[str, float] = {}
        counts: dict[str, int] = {}
        for _ in range(c.gradient_steps):
            batch = agent.prepare_replay_batch(buf.sample(c.batch_size))
            stats = agent.learn(batch)
            if self._update_priorities is not None and self.algorithm.last_priorities is not None:
                self._update_priorities(batch.indices, self.algorithm.last_priorities)
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + v
                counts[k] = counts.get(k, 0) + 1
        return {k: v / counts[k] for k, v in totals.items()}
