"""The offline trainer: gradient updates on minibatches of a fixed dataset, no env steps.

Family ``"offline"`` (BC, CQL, TD3+BC). The dataset (:class:`~canter.data.dataset.TransitionDataset`)
is converted once to the algorithm's action representation; each iteration takes the config's
``gradient_steps`` updates on uniformly drawn minibatches of ``batch_size`` transitions. The
trainer's ``step`` counts gradient updates, so ``max_steps``, ``eval_every``,
``checkpoint_every`` and the algorithm's schedules (DQN's ``target_update_interval``) are all
in updates. Evaluation runs the deterministic policy (or, ``eval_deterministic: false``, its samples) on the
eval env, as online, after exactly every ``eval_every`` updates: an iteration ends early where an evaluation is
due (the updates, and the minibatches drawn, are the same as without it). So is a periodic checkpoint
(``checkpoint_every``) of the :class:`~canter.run.Run` around the trainer (:attr:`Trainer.checkpoint_due`), where
a record is yielded there (whatever ``log_every`` says).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from canter.agents.agent import Agent
from canter.config import RunConfig
from canter.data.batch import ReplayBatch
from canter.data.dataset import TransitionDataset
from canter.envs.vector import VecEnv
from canter.trainers.base import Trainer
from canter.trainers.updates import mean_stats, minibatches_fit
from canter.utils import stream_rng



def dataset_obs_moments(parts: tuple[np.ndarray, ...], chunk_bytes: int = 1 << 26) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and (population) variance over the rows of all ``parts``, in float64, computed a chunk of
    rows at a time (two passes), so a large image dataset is never copied whole into float64 (1M
    84x84x4 frames are 28 GB as uint8, 226 GB as float64)."""
    rows = sum(len(p) for p in parts)
    row_bytes = 8 * max(1, int(np.prod(parts[0].shape[1:])))
    step = max(1, chunk_bytes // row_bytes)
    total = np.zeros(parts[0].shape[1:], np.float64)
    for p in parts:
        for i in range(0, len(p), step):
            total += p[i:i + step].sum(axis=0, dtype=np.float64)
    mean = total / rows
    sq = np.zeros_like(mean)
    for p in parts:
        for i in range(0, len(p), step):
            sq += np.square(p[i:i + step].astype(np.float64) - mean).sum(axis=0)
    return mean, sq / rows, rows

class OfflineTrainer(Trainer):
    """Learns from ``dataset`` only; ``env`` is None (the eval env still runs the policy)."""

    no_env_steps = "an offline run steps no env (it learns from its dataset)"

    def __init__(self, agent: Agent, dataset: TransitionDataset, eval_env: VecEnv | None, run: RunConfig,
                 callbacks: Any = ()) -> None:
        super().__init__(agent, None, eval_env, run, callbacks)
        self.dataset = dataset

    def setup(self) -> None:
        """Convert the dataset once: algorithm actions, float32 rewards and flags; observation
        statistics (with ``normalize_obs``) from the whole dataset (TD3+BC: its observations only)."""
        d, agent = self.dataset, self.agent
        self.data_obs, self.data_next_obs = d.obs, d.next_obs  # raw; the agent normalises each minibatch
        self.actions = agent.from_env_actions(d.actions)
        self.rewards = d.rewards.astype(np.float32)
        self.terminated = d.terminated.astype(np.float32)
        self.rng = stream_rng(self.run.seed, "offline")
        # set, not folded in: a resumed run has the same statistics already; a run started from a saved agent
        # (init_from) keeps that agent's, which its networks were trained with (they were replaced here)
        if agent.obs_rms is not None and not self.run.init_from:
            # TD3+BC (obs_std_eps): the paper's, over the dataset's states only
            parts = (d.obs,) if getattr(agent, "obs_std_eps", None) is not None else (d.obs, d.next_obs)
            mean, var, count = dataset_obs_moments(parts)
            agent.obs_rms.load_state_dict({"mean": mean, "var": var, "count": count})
        self.gamma = float(getattr(self.config, "gamma", 1.0))  # behaviour cloning has no discount
        with minibatches_fit(self.config.batch_size):
            self._ones = torch.ones(self.config.batch_size)
            self._discounts = torch.full((self.config.batch_size,), self.gamma)

    def sample(self, n: int) -> ReplayBatch:
        """``n`` transitions drawn uniformly with replacement from the trainer's seeded generator."""
        idx = self.rng.integers(0, len(self.dataset), size=n)
        ones = self._ones if n == len(self._ones) else torch.ones(n)
        discounts = self._discounts if n == len(self._discounts) else torch.full((n,), self.gamma)
        return ReplayBatch(
            obs=torch.from_numpy(self.data_obs[idx]), actions=torch.from_numpy(self.actions[idx]),
            rewards=torch.from_numpy(self.rewards[idx]), next_obs=torch.from_numpy(self.data_next_obs[idx]),
            terminated=torch.from_numpy(self.terminated[idx]), discounts=discounts, weights=ones,
            indices=torch.from_numpy(idx),
        )

    def iteration(self) -> dict[str, float]:
        """``gradient_steps`` updates (fewer if the budget ends sooner, or an evaluation or a periodic checkpoint
        is due sooner: they come after exactly ``eval_every`` and ``checkpoint_every`` updates); ``step`` advances
        by one per update, and the schedules (target syncs, learning rates) follow it update by update."""
        agent, c = self.agent, self.config
        marks = (self._next_eval if self.evaluates else None, self.checkpoint_due)
        due = [m - self.step for m in marks if m is not None and m > self.step]  # (one passed: log_every > 1)
        updates = max(1, min(c.gradient_steps, self.run.max_steps - self.step, *due))
        stats = []
        with self.updating(), minibatches_fit(c.batch_size):
            for _ in range(updates):
                self.set_progress()
                stats.append(agent.learn(agent.prepare_replay_batch(self.sample(c.batch_size))))
                self.step += 1
        return self.algorithm.carry_stats(mean_stats(stats))

    def state(self) -> dict[str, Any]:
        """Counters, plus the dataset's size and id (:func:`canter.api.resume_trainer` checks the id)."""
        return {**super().state(), "dataset_transitions": len(self.dataset), "dataset_id": self.dataset.dataset_id}

    def data_state(self) -> dict[str, Any]:
        """The minibatch generator's state (the data itself is the dataset file)."""
        return {"sample_rng": self.rng.bit_generator.state}

    def load_data_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.rng.bit_generator.state = state["sample_rng"]
