"""The shared trainer loop: iterations, episode statistics, evaluation, stop criteria."""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from canter.agents.agent import Agent
from canter.algorithms.base import threads_for
from canter.config import RunConfig
from canter.envs.vector import VecEnv
from canter.trainers.evaluation import EvalResult, evaluate


@dataclass(frozen=True)
class EpisodeInfo:
    """A finished training episode."""

    step: int
    wall_time: float
    episode_return: float
    episode_length: int
    rolling_return: float


@dataclass
class TrainRecord:
    """One log record, yielded by a trainer after each iteration."""

    step: int
    iteration: int
    wall_time: float
    steps_per_second: float
    episodes: list[EpisodeInfo] = field(default_factory=list)
    rolling_return: float | None = None
    losses: dict[str, float] = field(default_factory=dict)
    evaluation: EvalResult | None = None
    best_eval_return: float | None = None
    new_best: bool = False
    done: bool = False
    stop_reason: str | None = None


class Trainer:
    """Base trainer. Subclasses implement :meth:`iteration` (collect, store, learn).

    ``for record in trainer(): ...`` runs training; the loop stops at the target reward
    (deterministic evaluation), the step budget or the wall-clock budget. Loggers and
    checkpointing wrap this generator (see :mod:`canter.run`); they are not part of it.
    """

    def __init__(
        self, agent: Agent, env: VecEnv, eval_env: VecEnv | None, run: RunConfig, rolling_window: int = 100
    ) -> None:
        self.agent, self.env, self.eval_env, self.run = agent, env, eval_env, run
        self.algorithm = agent.algorithm
        self.config = agent.algorithm.config
        self.step = 0
        self.iteration_count = 0
        self.episode_count = 0
        self.best_eval_return: float | None = None
        self.last_eval: EvalResult | None = None
        self.evaluations = 0
        self.recent_returns: deque[float] = deque(maxlen=rolling_window)
        self._pending: list[EpisodeInfo] = []
        self._next_eval = run.eval_every if run.eval_every > 0 else None
        self.obs: np.ndarray | None = None
        self.wall_start = 0.0
        self.elapsed_before = 0.0
        self.max_seconds: float | None = run.max_seconds

    # -- to implement -----------------------------------------------------------------------
    def setup(self) -> None:
        """Allocate buffers; called once before the first iteration."""

    def iteration(self) -> dict[str, float]:
        """Collect data and learn once; return update statistics."""
        raise NotImplementedError

    # -- shared helpers ---------------------------------------------------------------------
    def wall_time(self) -> float:
        """Seconds of training so far (including time before a resume)."""
        return self.elapsed_before + time.perf_counter() - self.wall_start

    def record_episodes(self) -> None:
        """Collect episodes the env finished in its last step."""
        env = self.env
        if env.finished_envs.size:
            now = self.wall_time()
            for ret, length in zip(env.finished_returns.tolist(), env.finished_lengths.tolist()):
                self.recent_returns.append(ret)
                self.episode_count += 1
                rolling = float(np.mean(self.recent_returns))
                self._pending.append(EpisodeInfo(self.step, now, ret, length, rolling))

    def evaluate(self) -> EvalResult:
        """Deterministic evaluation on the eval env (seeded per evaluation)."""
        assert self.eval_env is not None
        seed = self.run.seed + 1_000_003 + 7919 * self.evaluations
        self.evaluations += 1
        return evaluate(self.agent, self.eval_env, self.run.eval_episodes, seed=seed)

    def _stop_reason(self, result: EvalResult | None) -> str | None:
        target = self.run.target_reward
        if result is not None and target is not None and result.mean_return >= target:
            return "target_reward"
        if self.step >= self.run.max_steps:
            return "max_steps"
        if self.max_seconds is not None and self.wall_time() >= self.max_seconds:
            return "max_seconds"
        return None

    def state(self) -> dict[str, Any]:
        """Counters to save with a checkpoint."""
        return {
            "step": self.step, "iteration": self.iteration_count, "episodes": self.episode_count,
            "best_eval_return": self.best_eval_return, "evaluations": self.evaluations,
            "last_eval_return": None if self.last_eval is None else self.last_eval.mean_return,
            "wall_time": self.wall_time() if self.wall_start else 0.0,
        }

    def close(self) -> None:
        """Close the training and evaluation envs."""
        self.env.close()
        if self.eval_env is not None:
            self.eval_env.close()

    def __call__(self) -> Iterator[TrainRecord]:
        """Run training, yielding one :class:`TrainRecord` per iteration."""
        threads = getattr(self.agent, "torch_threads", None)
        torch.set_num_threads(self.run.torch_threads or threads or threads_for(self.algorithm.hidden_width()))
        self.setup()
        self.obs = self.env.reset(seed=self.run.seed)
        self.wall_start = time.perf_counter()
        last_time, last_step = self.wall_start, self.step
        while True:
            losses = self.iteration()
            self.iteration_count += 1
            result = None
            due_eval = self._next_eval is not None and self.step >= self._next_eval
            at_end = self.step >= self.run.max_steps
            if self.eval_env is not None and (due_eval or at_end):
                result = self.evaluate()
                self.last_eval = result
                while self._next_eval is not None and self._next_eval <= self.step:
                    self._next_eval += self.run.eval_every
            new_best = result is not None and (self.best_eval_return is None or result.mean_return > self.best_eval_return)
            if new_best:
                self.best_eval_return = result.mean_return
            reason = self._stop_reason(result)
            if reason is None and self.iteration_count % self.run.log_every and result is None:
                continue
            now = time.perf_counter()
            sps = (self.step - last_step) / max(now - last_time, 1e-9)
            last_time, last_step = now, self.step
            episodes, self._pending = self._pending, []
            yield TrainRecord(
                step=self.step, iteration=self.iteration_count, wall_time=self.wall_time(), steps_per_second=sps,
                episodes=episodes, rolling_return=float(np.mean(self.recent_returns)) if self.recent_returns else None,
                losses=losses, evaluation=result, best_eval_return=self.best_eval_return, new_best=new_best,
                done=reason is not None, stop_reason=reason,
            )
            if reason is not None:
                return
