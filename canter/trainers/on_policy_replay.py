"""Trainer for on-policy algorithms that also replay recent trajectories (family ``on_policy_replay``: ACER).

Each iteration collects one segment of ``n_steps`` vector steps into a :class:`SegmentReplay`
slot, learns from it once (on-policy), then learns from ``Poisson(replay_ratio)`` segments drawn
from the replay (off-policy) once it holds ``replay_start`` transitions.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.data.pixel_columns import PixelColumns
from canter.data.segments import SegmentReplay
from canter.errors import CanterError, CanterWarning, warn
from canter.trainers.base import Trainer
from canter.trainers.on_policy import agent_rows, rollout_rows, warn_rollout_budget
from canter.utils import stream_rng


def check_segment_buffer(config: Any, rows: int, run: Any) -> None:
    """Refuse a new run's ``buffer_size`` below one segment (``n_steps`` x ``rows``, the env or agent rows) where it
    replays (``replay_ratio`` > 0): the replay holds whole segments, and one such buffer held a whole segment all the
    same (buffer_size 5 held 160 transitions and replayed past replay_start 100); Baselines' ACER, which counts its
    buffer in segments too, has no slot at all there. A resumed run keeps its buffer (it was made before this check)."""
    segment = config.n_steps * rows
    if config.replay_ratio > 0 and config.buffer_size < segment:
        told = rollout_rows(rows, run.n_envs, agent_rows(run))  # a multi-agent env's rows are agents'
        raise CanterError(f"hparams.buffer_size ({config.buffer_size:,}) is below one segment of n_steps "
                          f"{config.n_steps} x {told} = {segment:,} transitions, the least the replay holds: set "
                          f"buffer_size to at least {segment:,}, or replay_ratio 0 to turn replay off")


class SegmentReplayTrainer(Trainer):
    """Collect a segment, learn on it, then replay ``Poisson(replay_ratio)`` stored segments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the run takes whole segments: a budget below one is warned about, as the on-policy trainers' rollouts are
        # (acer --max-steps 10 with n_steps 20 x 8 envs took 160 steps without a word)
        warn_rollout_budget(self.run.max_steps, self.config.n_steps, self.env.num_envs, self.run.n_envs,
                            agent_rows(self.run))

    def setup(self) -> None:  # noqa: D102
        c, n = self.config, self.env.num_envs
        told = rollout_rows(n, self.run.n_envs, agent_rows(self.run))  # a multi-agent env's: agent rows, not envs
        obs_space = self.agent.observation_space
        obs_dtype = torch.int64 if isinstance(obs_space, gym.spaces.Discrete) else torch.float32
        if getattr(obs_space, "dtype", None) == np.uint8 and self.agent.obs_rms is None:
            obs_dtype = torch.uint8  # images as the env gives them (the encoder scales them): 4x less memory
        capacity = max(1, c.buffer_size // (c.n_steps * n))
        n_actions = int(self.agent.action_space.n)
        columns = PixelColumns.of(obs_space) if obs_dtype == torch.float32 else None  # pixels as bytes
        try:
            self.replay = SegmentReplay(capacity, c.n_steps, n, obs_space.shape, n_actions, obs_dtype, columns)
        except (MemoryError, RuntimeError, OverflowError, TypeError) as exc:  # torch's: many lines of C++ frames
            if isinstance(exc, (RuntimeError, TypeError)) and not any(
                    word in str(exc).lower() for word in ("alloc", "overflow")):  # torch's allocator / size only
                raise
            rows = capacity * c.n_steps * n
            obs_bytes = (int(np.prod(obs_space.shape)) * torch.empty((), dtype=obs_dtype).element_size() if columns is None
                         else columns.n_pixels + 4 * columns.n_rest)
            per_row = obs_bytes + 4 * n_actions + 25
            raise CanterError(f"the segment replay does not fit in memory (hparams.buffer_size {c.buffer_size:,} = "
                              f"{capacity:,} segment{'s' if capacity > 1 else ''} of n_steps {c.n_steps} x {told}, about "
                              f"{rows * per_row / 2**30:,.1f} GiB); lower hparams.{'n_steps' if capacity == 1 else 'buffer_size'}") from None
        held = capacity * c.n_steps * n
        if c.replay_ratio > 0 and held < c.replay_start:  # the replay can never hold replay_start transitions
            warn(CanterWarning(
                f"ACER never replays: hparams.buffer_size {c.buffer_size:,} holds {capacity:,} whole "
                f"segment{'s' if capacity > 1 else ''} of n_steps {c.n_steps} x {told} = {held:,} transitions, fewer "
                f"than hparams.replay_start {c.replay_start:,}; raise buffer_size or lower replay_start (replay_ratio 0 turns replay off)"
            ))
        self.rng = stream_rng(self.run.seed, "on_policy_replay")

    def data_state(self) -> dict[str, Any]:
        """The segment replay and the generator that draws the replayed updates and their segments."""
        return {"segment_replay": self.replay.state_dict(), "replay_rng": self.rng.bit_generator.state}

    def load_data_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        self.replay.load_state_dict(state["segment_replay"])
        self.rng.bit_generator.state = state["replay_rng"]

    def iteration(self) -> dict[str, float]:
        """One segment, one on-policy update, then the replayed updates."""
        agent, env, replay, c = self.agent, self.env, self.replay, self.config
        obs = self.obs
        kept = replay.slot_copy() if self.hooks.env_step_hooks() else None  # on_env_step hooks are called
        for t in range(c.n_steps):
            actions, obs_t, out = agent.sample(obs)
            step = env.step(actions)
            done, reward = self.count_step(step)
            replay.add(t, obs_t, out.actions, out.probs, reward, step.terminated, done, step.valid)
            self.record_episodes()
            if kept is not None and self.stop_at_env_step(obs, actions, step):
                self.obs = step.obs  # the segment under way is dropped: the next one starts here
                replay.restore_slot(kept)
                return {}
            obs = step.obs
        self.obs = obs
        batch = replay.finish(agent.obs_to_host(obs))
        self.set_progress()  # the algorithm's schedules, then the run's LR control (lr_decay, plateaus, guard)
        with self.updating():
            stats = agent.learn(batch)
            replays = int(self.rng.poisson(c.replay_ratio)) if replay.transitions >= c.replay_start else 0
            for _ in range(replays):
                agent.learn(replay.sample(self.rng))
        stats["replay_updates"] = float(replays)
        return stats
