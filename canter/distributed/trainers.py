"""The Learner's side: three drivers that turn explorer rollouts into updates.

- :class:`SyncTrainer` (on-policy: PPO, A2C): gather one rollout from every explorer, compute
  GAE over all of them, learn once, broadcast. The batch has the same layout as the
  single-process :class:`~canter.trainers.OnPolicyTrainer` with all the envs in one process.
- :class:`AsyncTrainer` (IMPALA, APPO): learn from each rollout as it arrives (V-trace corrects
  for stale weights); explorers keep one extra call queued, so they never wait for the learner.
- :class:`ApeXTrainer` (off-policy: DQN, SAC, TD3): explorers with their own exploration fill a
  central replay buffer; the learner keeps the configured replay ratio
  (``gradient_steps / train_freq`` updates per env step).

Each driver is a :class:`~canter.trainers.Trainer` whose ``env`` is the explorer pool, so the
loop, evaluation, stop criteria, records, ``Run``, loggers and checkpoints are the usual ones.
Observation statistics belong to the learner: explorers normalise with the statistics they were
sent, and the learner folds the new observations in after it has learned from them.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from canter.agents.agent import Agent
from canter.algorithms.offpolicy import phase_gradient_steps
from canter.config import RunConfig
from canter.data.batch import TrajectoryBatch
from canter.data.sharded import ShardedReplay
from canter.distributed.explorer import explorer_weights, nbytes, rollout_array
from canter.envs.atari_rgb import frame_channels
from canter.envs.vector import VecEnv
from canter.errors import CanterError
from canter.stop_criteria import StepBudget, TimeBudget
from canter.trainers.base import Trainer
from canter.trainers.guard import Divergence
from canter.trainers.off_policy import OffPolicyTrainer, make_replay_buffer
from canter.trainers.on_policy import (OnPolicyTrainer, agent_rows, no_values_error, warn_one_minibatch,
                                      warn_rollout_budget)

#: per-explorer throughput is logged individually up to this many explorers (min/max beyond)
PER_EXPLORER_STATS = 8


def obs_tensor(agent: Agent, obs: np.ndarray, lead: int) -> torch.Tensor:
    """Normalise raw observations with the learner's statistics (no update), keeping ``lead`` dims: a
    CPU tensor, as the rollout buffer holds them (``Agent.learn`` moves the batch to the device)."""
    shape = obs.shape[:lead]
    flat = agent.obs_to_host(obs.reshape((-1,) + obs.shape[lead:]))
    return flat.reshape(shape + flat.shape[1:])


def scale_rewards(agent: Agent, rewards: np.ndarray, dones: np.ndarray, valid: np.ndarray,
                  envs: slice, scale: bool = True) -> np.ndarray:
    """``Agent.scale_reward`` over a ``[T, n]`` block of rewards from sub-envs ``envs`` of all envs
    (``scale=False``: the statistics are updated, the raw rewards returned, for a replay buffer).

    The learner's Agent tracks one discounted return per env of the whole run; rewards from one
    explorer update only its block, in time order, as the single-process trainer would; ``valid``
    keeps the reset-only steps out of the return statistics.
    """
    if agent.ret_rms is None:
        return rewards
    everything = agent._returns
    agent._returns = everything[envs].copy()
    try:
        out = np.stack([agent.scale_reward(rewards[t], dones[t].astype(bool), valid[t].astype(bool), scale)
                        for t in range(len(rewards))])
        everything[envs] = agent._returns
    finally:
        agent._returns = everything
    return out


def no_log_probs_error(algo: str) -> CanterError:
    """The one-line error for an asynchronous algorithm (IMPALA, APPO) whose ``act`` returned no
    log-probabilities: V-trace weighs each step by pi/mu, so it needs the behaviour policy's log mu."""
    return CanterError(f"algorithm '{algo}' returned no log-probabilities from act (ActOutput.log_probs is None); "
                       f"an asynchronous algorithm's act must return the behaviour policy's log-probabilities "
                       f"for V-trace: ActOutput(actions, log_probs, values)")


def update_obs_stats(agent: Agent, obs: np.ndarray, lead: int, observed: np.ndarray | None = None) -> None:
    """Fold raw observations into the learner's running statistics (if it normalises): the rows
    ``observed`` marks, where given (a trajectory's ``observed``: a multi-agent env's departed agents
    repeat their final observation)."""
    if agent.obs_rms is not None:
        rows = obs.reshape((-1,) + obs.shape[lead:])
        agent.update_obs_stats(rows, None if observed is None else observed.reshape(-1))


class Learner:
    """Mixin for the drivers: the explorer pool as ``env``, weight broadcasts, explorer statistics."""

    no_env_steps = "a learner/explorer run (--explorers, IMPALA, APPO) steps its envs in its explorers, not the trainer"

    def __init__(self, agent: Agent, pool: Any, eval_env: VecEnv | None, run: RunConfig,
                 callbacks: Iterable[Any] = ()) -> None:
        super().__init__(agent, pool, eval_env, run, callbacks=callbacks)  # the Trainer: the pool is its env
        self.pool = pool
        self.version = 0
        self.trajectory_bytes = 0
        self._lags: list[int] = []
        self._explorer_steps = np.zeros(self.pool.count, np.int64)
        self._start_depth = 0  # rollouts per explorer still to queue (Ray explorers: at the first iteration)

    def _iterate(self) -> dict[str, float]:
        """The trainer's iteration (the Ray explorers' first rollouts queued at the first)."""
        if self._start_depth:
            self._queue_start()
        return super()._iterate()

    def handle_divergence(self, err: Divergence) -> dict[str, float]:
        """After the divergence guard restored the last good state (a divergence in the iteration, or in what an
        ``after_update`` hook added), the explorers get the restored weights (they would act on weights the
        learner no longer has)."""
        restores = self.guard.restores
        losses = super().handle_divergence(err)
        if self.guard.restores != restores:
            self.publish()
        return losses

    def state(self) -> dict[str, Any]:
        """The trainer's counters plus ``weights_version`` (the broadcasts so far) and, with Ray explorers,
        the explorer statistics that count from the run's start (each explorer's env steps, restarts, MB
        sent and received), so that a resumed run keeps counting them."""
        state = {**super().state(), "weights_version": self.version}  # type: ignore[misc]
        if self.pool.remote:
            state.update(
                explorer_steps=[int(s) for s in self._explorer_steps], explorer_restarts=self.pool.restarts,
                weights_bytes=self.pool.weights_bytes, trajectory_bytes=self.trajectory_bytes,
            )
        return state

    def resume_from(self, state: dict[str, Any]) -> None:
        """Continue from ``state``; the weights version goes on from the saved one before :meth:`setup`
        broadcasts the resumed weights, so rollouts queued with that broadcast carry a later version."""
        super().resume_from(state)  # type: ignore[misc]
        self.version = int(state["counters"].get("weights_version", 0))

    def load_resume_state(self, state: dict[str, Any]) -> None:
        """Restore the trainer's state and the explorer statistics of :meth:`state` (added to what this
        process already counted: its first broadcast and submissions happen before the resume)."""
        super().load_resume_state(state)  # type: ignore[misc]
        c = state["counters"]
        if not self.pool.remote:  # the in-process explorer shares the learner's weights: no broadcast happened
            self.version = int(c.get("weights_version", self.version))
        steps = c.get("explorer_steps")
        if steps is not None and len(steps) == len(self._explorer_steps):
            self._explorer_steps += np.asarray(steps, np.int64)
        self.pool.restarts += int(c.get("explorer_restarts", 0))
        self.pool.weights_bytes += int(c.get("weights_bytes", 0))
        self.trajectory_bytes += int(c.get("trajectory_bytes", 0))

    def publish(self) -> None:
        """Bump the weights version and hand the weights to the pool (one ``ray.put``)."""
        self.version += 1
        self.pool.publish(explorer_weights(self.agent) if self.pool.remote else None, self.version)

    def publish_changed(self, learned: bool) -> None:
        """:meth:`publish` after an iteration that may have changed what explorers are sent: ``learn`` was
        given a row to learn from (``learned``), or the observation statistics took the rollout in. A
        rollout of reset rows only (nothing to learn) changes neither: the same weights, no new version.
        (Not read from ``learn``'s statistics or ``algorithm.updates``: a user's algorithm may train
        without reporting either, and its explorers then never got new weights.)"""
        if learned or self.agent.obs_rms is not None:
            self.publish()

    def rewards_of(self, slot: int, result: dict[str, Any]) -> np.ndarray:
        """The rollout's rewards, folded into the learner's per-env return statistics and scaled by
        them where the trainer's :attr:`scaled_rewards` (``normalize_reward``)."""
        n = self.pool.envs_per_explorer
        envs = slice(slot * n, (slot + 1) * n)
        return scale_rewards(self.agent, result["rewards"], result["dones"], result["valid"], envs,
                             self.scaled_rewards)

    def receive(self, results: list[dict[str, Any]]) -> None:
        """Count the env steps, episodes, policy lag and bytes of the rollouts the pool just returned,
        and check their env data (:meth:`check_rollouts`) before anything reaches a buffer or network.
        A replacement explorer's first rollout (``fresh_episodes``) zeroes the running discounted returns
        of its envs (``normalize_reward``), as fresh episodes after a resume do. Each finished episode is
        stamped with the step of the vector step it ended on (as :meth:`check_rollouts` names a step).

        Several results (a synchronous gather) were collected side by side: their row ``t`` is one vector
        step of all their envs together, as in one process with all the envs, so an episode that ended on
        row ``t`` is stamped ``start + (t + 1) * all_envs`` and the episodes are recorded in that order
        (stamped explorer after explorer, the second explorer's episodes lay a whole rollout later than
        the first's, and a single-process run's history was not what such a run recorded)."""
        start = self.step
        widths = [r["steps"] // max(len(r["rewards"]), 1) for r in results]  # each explorer's envs
        stride = sum(widths)  # env steps per row of all the results together
        ended = []
        for r in results:
            rows = r.get("episode_rows")  # None: a result from an older explorer, its episodes at its rollout's end
            ended.append(np.full(len(r["episode_returns"]), start + stride * len(r["rewards"])) if rows is None
                         else start + (np.asarray(rows, np.int64) + 1) * stride)
            self.step += r["steps"]
            if r.get("fresh_episodes") and self.agent.ret_rms is not None:  # a replacement explorer's first
                n = self.pool.envs_per_explorer  # rollout: its envs' episodes are new, their returns start at 0
                self.agent._returns[r["index"] * n:(r["index"] + 1) * n] = 0.0
            self._explorer_steps[r["index"]] += r["steps"]
            if self.pool.remote:  # only remote explorers lag (explorer_stats reads and clears the list)
                self._lags.append(self.version - r["version"])
            self.trajectory_bytes += nbytes(r)
        self.check_rollouts(results, start, stride)  # (their steps counted, as a single process counts a bad one's)
        steps = np.concatenate(ended) if ended else None  # the pool's finished_* arrays, in this order
        if len(results) > 1 and steps is not None and len(steps) > 1:
            order = np.argsort(steps, kind="stable")  # by vector step; on one step, in sub-env order
            steps = steps[order]
            pool = self.pool
            pool.finished_returns, pool.finished_lengths = pool.finished_returns[order], pool.finished_lengths[order]
            pool.finished_envs = pool.finished_envs[order]
            if len(pool.finished_success) == len(order):
                pool.finished_success = pool.finished_success[order]
        self.record_episodes(steps)

    def check_rollouts(self, results: list[dict[str, Any]], start: int, stride: int) -> None:
        """The divergence guard's env-data check, which the single-process trainers make on every vector
        step: a NaN/inf observation or reward raises :class:`Divergence` (it stops the run in every
        mode), naming the sub-env among all the run's envs and the step of the vector step that
        returned it (``start``: the step before the rollouts, ``stride``: env steps per row of them all).
        Of a gather's rollouts, collected side by side, the earliest vector step is named, as one process with
        all the envs meets it (an observation before a reward, then the lowest sub-env): checked explorer after
        explorer, explorer 0's NaN of row 3 was named where explorer 1's of row 1 came first."""
        if not self.guard.enabled:
            return
        found = []  # (row, 0 observation / 1 reward, sub-env) of each rollout's first non-finite value
        for result in results:
            obs, last, rewards = result["obs"], result["last_obs"], result["rewards"]
            floats = obs.dtype.kind == "f"
            if (not floats or (math.isfinite(obs.sum()) and math.isfinite(last.sum()))) and \
                    math.isfinite(rewards.sum()):
                continue  # the common case: one reduction per array (a sum overflowing is confirmed below)
            T, n = rewards.shape
            returned = np.concatenate([obs[1:], last[None]]).reshape(T, n, -1) if floats else None  # obs step t returned
            for t in range(T):
                bad_obs = None if returned is None else ~np.isfinite(returned[t]).all(axis=1)
                bad = next(((what, b) for what, b in enumerate((bad_obs, ~np.isfinite(rewards[t])))
                            if b is not None and b.any()), None)
                if bad is not None:
                    found.append((t, bad[0], result["index"] * n + int(np.flatnonzero(bad[1])[0])))
                    break
        if found:
            t, what, sub = min(found)
            raise Divergence(f"{('observation', 'reward')[what]} from the env (sub-env {sub})", start + (t + 1) * stride)

    def explorer_stats(self) -> dict[str, float]:
        """Policy lag since the last call and cumulative explorer statistics (logged with the losses).

        Empty for the in-process explorer: no lag, no transfers, and timings would make the
        records of a seeded run differ.
        """
        if not self.pool.remote:
            return {}
        wall = max(self.wall_time(), 1e-9)
        sps = self._explorer_steps / wall
        lags, self._lags = self._lags, []
        stats = {
            "policy_lag": float(np.mean(lags)) if lags else 0.0, "policy_lag_max": float(max(lags, default=0)),
            "weights_version": float(self.version), "explorer_restarts": float(self.pool.restarts),
            "weights_mb": self.pool.weights_bytes / 2**20, "trajectory_mb": self.trajectory_bytes / 2**20,
            "explorer_steps_per_second_min": float(sps.min()), "explorer_steps_per_second_max": float(sps.max()),
        }
        if len(sps) <= PER_EXPLORER_STATS:
            stats.update({f"explorer{i}_steps_per_second": float(s) for i, s in enumerate(sps)})
        return stats

    def start_explorers(self, depth: int) -> None:
        """Publish the initial weights and queue ``depth`` rollouts per explorer (:meth:`rollout_kw`).

        Ray explorers get theirs at the first iteration: a resumed run resets their envs with its new
        seed after :meth:`setup`, and an actor runs its calls in order, so rollouts queued here would
        run first, from the envs as built (the original run's first episodes), and with the settings
        of step 0 (Ape-X: random actions before ``learning_starts``)."""
        self.publish()
        self._start_depth = depth
        if not self.pool.remote:  # the in-process queue is part of an exact resume's saved state
            self._queue_start()

    def _queue_start(self) -> None:
        depth, self._start_depth = self._start_depth, 0
        for slot in range(self.pool.count):
            for _ in range(depth):
                self.pool.submit(slot, **self.rollout_kw())

    def rollout_kw(self) -> dict[str, Any]:
        """The settings of the next rollout call (the drivers that queue calls define it)."""
        raise NotImplementedError


class SyncTrainer(Learner, OnPolicyTrainer):
    """Synchronous on-policy training: gather from all explorers, update, broadcast."""

    def setup(self) -> None:  # noqa: D102
        super().setup()  # the rollout buffer, sized for all explorers' envs
        self.publish()

    def iteration(self) -> dict[str, float]:
        """One rollout from every explorer, GAE over all envs, one ``learn`` call."""
        agent, buf, c = self.agent, self.buffer, self.config
        results = self.pool.gather(n_steps=c.n_steps, bootstrap=True)
        self.receive(results)
        if any("values" not in r for r in results):
            raise no_values_error(self.run.algo)
        # an algorithm whose act gives no log-probabilities: NaN, as the single-process trainer stores them
        has_logp = all("log_probs" in r for r in results)
        data = {k: np.concatenate([r[k] for r in results], axis=1)
                for k in ("obs", "actions", "log_probs", "values", "rewards", "terminated", "dones", "valid")
                if k != "log_probs" or has_logp}
        last_values = np.concatenate([r["last_values"] for r in results])
        buf.put_obs(obs_tensor(agent, data["obs"], 2))  # pixels as bytes where the buffer stores them so
        buf.actions.copy_(torch.from_numpy(data["actions"]))
        if has_logp:
            buf.log_probs.copy_(torch.from_numpy(data["log_probs"]))
        else:
            buf.log_probs.fill_(math.nan)
        buf.values.copy_(torch.from_numpy(data["values"]))
        buf.rewards[:] = scale_rewards(agent, data["rewards"], data["dones"], data["valid"], slice(None))
        buf.terminated[:], buf.dones[:], buf.valid[:] = data["terminated"], data["dones"], data["valid"]
        buf.pos = c.n_steps
        batch = agent.prepare_rollout_batch(buf.finish(torch.from_numpy(last_values), c.gamma, c.gae_lambda))
        self.set_progress()  # the algorithm's schedules, then the run's LR control (lr_decay, plateaus, guard)
        stats: dict[str, float] = {}
        if batch.obs.shape[0]:  # else every row only reset an env (tiny n_steps * n_envs): nothing to learn
            with self.updating():
                stats = agent.learn(batch)
        observed = None  # every row a real observation, unless an explorer's env says otherwise (multi-agent)
        if any("observed" in r for r in results):
            observed = np.concatenate([r.get("observed", np.ones(r["valid"].shape, bool)) for r in results], axis=1)
        update_obs_stats(agent, data["obs"], 2, observed)
        self.publish_changed(bool(batch.obs.shape[0]))
        return {**stats, **self.explorer_stats()}


class AsyncTrainer(Learner, Trainer):
    """Asynchronous training (IMPALA, APPO): one update per arriving rollout, V-trace corrected."""

    #: rollouts dropped so far for exceeding ``run.max_policy_lag`` (saved with the counters)
    dropped: int = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # a rollout arrives whole: a budget below one is warned about (impala --max-steps 10 took 256 steps silently)
        warn_rollout_budget(self.run.max_steps, self.config.n_steps, self.pool.envs_per_explorer, self.run.n_envs,
                            agent_rows(self.run))

    def setup(self) -> None:  # noqa: D102
        # two calls per Ray explorer: the next rollout is queued while the learner works on this one
        self.dropped = 0
        space = self.agent.observation_space  # a rollout too big for memory: refused before the run starts
        rollout_array((self.config.n_steps, self.pool.envs_per_explorer) + space.shape, space.dtype,
                      copies=self.run.n_envs, agents=agent_rows(self.run))
        rows = self.pool.envs_per_explorer  # APPO's minibatches
        warn_one_minibatch(self.config, self.config.n_steps * rows, self.run.n_envs, agent_rows(self.run))
        self.start_explorers(2 if self.pool.remote else 1)

    def rollout_kw(self) -> dict[str, Any]:  # noqa: D102
        return {"n_steps": self.config.n_steps}

    def iteration(self) -> dict[str, float]:
        """Learn from the next finished rollout, then give that explorer new work."""
        agent = self.agent
        fresh = self.next_fresh_rollout()
        if fresh is None:  # the run stops (step budget, time budget, a stop request) before a fresh one came
            return {**self.explorer_stats(), "dropped_rollouts": float(self.dropped)}
        slot, r, rewards = fresh
        if "log_probs" not in r:  # the explorer leaves out what act did not return (in one process as on Ray)
            raise no_log_probs_error(self.run.algo)
        batch = TrajectoryBatch(
            obs_tensor(agent, r["obs"], 2), torch.from_numpy(r["actions"]), torch.from_numpy(r["log_probs"]),
            torch.from_numpy(rewards), torch.from_numpy(r["terminated"]), torch.from_numpy(r["dones"]),
            torch.from_numpy(r["valid"]), obs_tensor(agent, r["last_obs"], 1),
        )
        self.set_progress()  # the algorithm's schedules, then the run's LR control (lr_decay, plateaus, guard)
        try:
            with self.updating():
                stats = agent.learn(batch)
            update_obs_stats(agent, r["obs"], 2, r.get("observed"))
            self.publish_changed(bool(r["valid"].any()))
        finally:  # also after a divergence the guard handles: the explorer keeps its queued calls
            self.pool.submit(slot, **self.rollout_kw())
        return {**stats, **self.explorer_stats(), "dropped_rollouts": float(self.dropped)}

    def state(self) -> dict[str, Any]:
        """The trainer's counters plus ``dropped_rollouts``, so that a resumed run keeps counting."""
        return {**super().state(), "dropped_rollouts": self.dropped}

    def load_resume_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_resume_state(state)
        self.dropped = int(state["counters"].get("dropped_rollouts", 0))

    def next_fresh_rollout(self) -> tuple[int, dict[str, Any], np.ndarray] | None:
        """The next rollout whose policy lag is within ``run.max_policy_lag``: its slot, its data and
        its rewards (scaled, if configured; every rollout's go through the return statistics).

        Staler ones still count (env steps, episodes, lag statistics) but are not learned from;
        their explorer gets new work with the current weights at once. None when a dropped rollout
        leaves the run due to stop (:meth:`stops_now`): dropping on until a fresh one came ran up to
        2N-1 rollouts of N explorers past ``max_steps`` (4 explorers, ``max_steps`` 64, rollouts of 32
        steps: 288 steps) and never saw a Ctrl-C.
        """
        limit = self.run.max_policy_lag
        while True:
            slot, r = self.pool.wait()
            self.receive([r])
            rewards = self.rewards_of(slot, r)  # every rollout: the per-env returns follow its episodes
            if limit is None or self.version - r["version"] <= limit:
                return slot, r, rewards
            self.dropped += 1
            self.pool.submit(slot, **self.rollout_kw())
            if self.stops_now():
                return None

    def stops_now(self) -> bool:
        """Whether the loop stops after this iteration whatever it learns: the step or time budget is
        spent, or a stop was requested (Ctrl-C, SIGTERM, ``stop_requested``)."""
        return any(c.should_stop(self) is not None for c in (StepBudget(), TimeBudget())) \
            or self.requested_stop() is not None


class ApeXTrainer(Learner, OffPolicyTrainer):
    """Ape-X-style off-policy training: explorers feed a central replay buffer.

    The buffer has one shard per explorer (:class:`~canter.data.ShardedReplay`), so each
    explorer's envs stay continuous streams for n-step returns and truncation bootstrapping.
    """

    #: the fraction of a gradient step the arrived steps have paid for but not yet taken (:meth:`state` reads it,
    #: also before :meth:`setup`, when make_trainer has the agent remember the run's metadata)
    _owed: float = 0.0

    def make_buffer(self) -> ShardedReplay:  # type: ignore[override]
        """One buffer per explorer, each with that explorer's envs and its share of the capacity."""
        c, k = self.config, self.pool.count
        per = self.pool.envs_per_explorer
        frame_stack = frame_channels(self.run.env, self.run.env_kwargs)  # Atari: each frame stored once, as alone
        shards = [make_replay_buffer(self.agent, c, max(per, c.buffer_size // k), per, self.run.seed + 7919 * i,
                                     frame_stack=frame_stack, goals=self.goals) for i in range(k)]
        return ShardedReplay(shards, seed=self.run.seed)

    def setup(self) -> None:  # noqa: D102
        super().setup()  # the replay buffer
        c = self.config
        # one explorer call collects one training phase of the single-process trainer
        self.explorer_steps = max(1, math.ceil(c.train_freq / self.pool.envs_per_explorer))
        space = self.agent.observation_space  # a rollout too big for memory: refused before the run starts
        rollout_array((self.explorer_steps, self.pool.envs_per_explorer) + space.shape, space.dtype, knob="train_freq",
                      copies=self.run.n_envs, agents=agent_rows(self.run))
        self._owed = 0.0
        self.start_explorers(2)

    def rollout_kw(self) -> dict[str, Any]:  # noqa: D102
        kw = {"n_steps": self.explorer_steps, "random": self.step < self.config.learning_starts}
        if self.goals is not None and self.goals.info_keys:  # hindsight replay: the step infos compute_reward reads
            kw["info_keys"] = self.goals.info_keys
        return kw

    def state(self) -> dict[str, Any]:
        """The learner's counters plus the fraction of a gradient step the arrived steps have paid for
        but not yet taken (``train_freq`` not a multiple of a rollout's steps), which a resume keeps."""
        return {**super().state(), "owed_updates": self._owed}

    def load_resume_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        super().load_resume_state(state)
        self._owed = float(state["counters"].get("owed_updates", 0.0))

    def iteration(self) -> dict[str, float]:
        """Store the next finished rollout, then take the updates it pays for."""
        agent, c = self.agent, self.config
        slot, r = self.pool.wait()
        self.receive([r])
        rewards = self.rewards_of(slot, r)
        if r.get("fresh_episodes"):  # a replacement explorer's first rollout: its shard's running episodes end
            self.buffer.shards[slot].new_episodes()
        self.buffer.add_rollout(slot, r["obs"], r["actions"], rewards, r["last_obs"], r["terminated"], r["valid"],
                                r["dones"], r.get("infos"))
        update_obs_stats(agent, r["obs"], 2, r.get("observed"))
        stats: dict[str, float] = {}
        try:
            if self.step > c.learning_starts and len(self.buffer):  # as the single-process trainer
                self._owed += r["steps"] * phase_gradient_steps(c, c.train_freq) / c.train_freq  # -1: one per step
                updates = int(self._owed)
                self._owed -= updates
                if updates:
                    stats = self.train(updates)
                    self.publish()
        finally:  # also after a divergence the guard handles: the explorer keeps its queued calls
            self.pool.submit(slot, **self.rollout_kw())
        return {**stats, **self.explorer_stats()}
