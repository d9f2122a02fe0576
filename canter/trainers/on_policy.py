"""The on-policy trainer: collect a rollout from the vector env, compute GAE, learn once."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.data.pixel_columns import PixelColumns
from canter.data.rollout import RolloutBuffer
from canter.errors import CanterError, CanterWarning, warn
from canter.envs.vector import Step
from canter.trainers.stepwise import StepwiseTrainer


class OnPolicyTrainer(StepwiseTrainer):
    """Rollouts of ``n_steps`` per env; the algorithm's ``learn`` does its own epochs.

    The budget is checked between rollouts, so a run takes whole rollouts (as Stable-Baselines3's
    ``learn`` does); a budget smaller than one rollout is warned about.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the env copies of every Ray explorer (the pool is the env: explorers x n_envs copies), else the run's (a
        # RunConfig built by hand leaves n_envs None: the env's, a multi-agent env's copies, not its agent rows)
        copies = self.run.n_envs or env_rows(self.env)[0] or self.env.num_envs
        self.env_copies = copies * max(int(getattr(self.run, "explorers", 0) or 0), 1)
        warn_rollout_budget(self.cycle_budget, self.config.n_steps, self.env.num_envs, self.env_copies,
                            agent_rows(self.run))
        warn_one_minibatch(self.config, self.config.n_steps * self.env.num_envs, self.env_copies, agent_rows(self.run))

    def setup(self) -> None:  # noqa: D102
        super().setup()
        space = self.agent.action_space
        if isinstance(space, gym.spaces.Box):
            act_shape, act_dtype = (int(np.prod(space.shape)),), torch.float32  # the policy's flat output
        elif isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
            act_shape, act_dtype = (int(np.prod(space.shape)),), torch.int64  # one index per entry, flat
        else:
            act_shape, act_dtype = (), torch.int64
        obs_space = self.agent.observation_space
        normalized = getattr(self.agent, "obs_rms", None) is not None  # then the stored obs are floats
        obs_dtype = torch.int64 if isinstance(obs_space, gym.spaces.Discrete) else (
            torch.uint8 if obs_space.dtype == np.uint8 and not normalized else torch.float32)  # images stay uint8
        columns = PixelColumns.of(obs_space) if obs_dtype == torch.float32 else None  # pixels as bytes
        try:
            self.buffer = RolloutBuffer(
                self.config.n_steps, self.env.num_envs, obs_space.shape, act_shape, obs_dtype, act_dtype, columns
            )
        except (MemoryError, RuntimeError, OverflowError, TypeError) as exc:  # torch's: many lines of C++ frames
            if isinstance(exc, TypeError) and "Overflow" not in str(exc):  # a size beyond int64 is a TypeError
                raise
            if isinstance(exc, RuntimeError) and not any(word in str(exc).lower() for word in ("alloc", "overflow")):
                raise  # torch's allocator, or its size calculation ('Storage size calculation overflowed') only
            steps = self.config.n_steps * self.env.num_envs
            row = (int(np.prod(obs_space.shape)) * torch.empty((), dtype=obs_dtype).element_size() if columns is None
                   else columns.n_pixels + 4 * columns.n_rest)
            gib = steps * (row + 32) / 2**30
            told = rollout_rows(self.env.num_envs, self.env_copies, agent_rows(self.run))  # every explorer's copies
            raise CanterError(f"the rollout buffer does not fit in memory (hparams.n_steps {self.config.n_steps:,} x "
                              f"{told} = {steps:,} steps, about {gib:,.1f} GiB); lower hparams.n_steps or n_envs") from None

    def data_state(self) -> dict[str, Any]:
        """A rollout in progress (a multi-policy run's member stops mid-rollout when its ``n_steps``
        differs from the others'; between rollouts it is empty)."""
        return {"rollout": self.buffer.state_dict()}

    def load_data_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        if "rollout" in state:
            self.buffer.load_state_dict(state["rollout"])

    def drop_partial(self) -> None:
        """Drop the rollout under way (a stop at an env step)."""
        super().drop_partial()
        self.buffer.pos = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Sample exploring actions (their log-probabilities and values are kept for the rollout)."""
        rows = getattr(self.env, "observed", None)  # None: every row is a real observation (single-agent envs)
        actions, self._obs_t, self._out = self.agent.sample(obs) if rows is None else self.agent.sample(obs, rows)
        return actions

    def observe(self, step: Step) -> bool:
        """Store the step in the rollout; True when it holds ``n_steps`` vector steps."""
        _, reward = self.count_step(step)
        out = self._out
        if out.values is None:
            raise no_values_error(self.run.algo)
        self.buffer.add(self._obs_t, out.actions, out.log_probs, out.values, reward, step.terminated, step.truncated,
                        step.valid)
        self.record_episodes()
        self.obs = step.obs
        return self.due(self.config.n_steps)

    def update(self) -> dict[str, float]:
        """GAE over the rollout, then one call to ``learn`` (the algorithm does its own epochs)."""
        agent = self.agent
        last = agent.bootstrap_value(self.obs, getattr(self.env, "observed", None))
        batch = agent.prepare_rollout_batch(self.buffer.finish(last, self.config.gamma, self.config.gae_lambda))
        self.set_progress()
        if batch.obs.shape[0] == 0:  # every row only reset an env (tiny n_steps * n_envs): nothing to learn
            return {}
        with self.updating():
            return agent.learn(batch)


def no_values_error(algo: str) -> CanterError:
    """The one-line error for an on-policy algorithm whose ``act`` returned no values: GAE needs V(obs) of
    every step (log-probabilities may be missing: they are stored as NaN)."""
    return CanterError(f"algorithm '{algo}' returned no values from act (ActOutput.values is None); an on-policy "
                       f"algorithm's act must return V(obs) for GAE: ActOutput(actions, log_probs, values)")


def rollout_budget_message(max_steps: int, n_steps: int, rows: int, copies: int, agents: bool = False) -> str:
    """The warning for a ``max_steps`` below one rollout of ``n_steps`` x ``rows`` (env copies, or a multi-agent
    env's agent rows: every agent's step counts, ``copies`` copies of its agents): the rollout's size, that the run
    takes it whole (as Stable-Baselines3 does), and the setting that makes a rollout fit the budget; ``agents``: the
    rows are agents' (:func:`rollout_rows`)."""
    envs = rollout_rows(rows, copies, agents)
    # "the run takes N steps" ends it: a multi-policy member's is told in the run's steps (multi_policy._run_steps)
    return (f"max_steps ({max_steps:,}) is less than one rollout (n_steps {n_steps} x {envs} = {n_steps * rows:,} "
            f"steps; {fitting_rollout(max_steps, rows)}): the run takes {n_steps * rows:,} steps")


def warn_rollout_budget(max_steps: int, n_steps: int, rows: int, copies: int, agents: bool = False) -> None:
    """Warn (:func:`rollout_budget_message`) when one rollout of ``n_steps`` x ``rows`` exceeds ``max_steps``: every
    trainer that takes whole rollouts (or segments) past the budget, as Stable-Baselines3 does, says so."""
    if n_steps * rows > max_steps:
        warn(CanterWarning(rollout_budget_message(max_steps, n_steps, rows, copies, agents)))


def rollout_rows(rows: int, copies: int, agents: bool = False) -> str:
    """A rollout's ``rows`` told as env copies, or as a multi-agent env's agent rows of ``copies`` copies (every
    agent's step counts): ``"8 envs"``, ``"16 agent rows (8 env copies x 2 agents)"``; with ``agents`` (rows of a
    multi-agent env's agents, :func:`agent_rows`) also at one agent per copy: ``"2 agent rows (2 env copies x 1
    agent)"``, a multi-policy run's policy of one agent per copy, which was "2 envs"."""
    per_copy = rows // copies if copies and rows % copies == 0 else 1
    return (f"{rows:,} agent row{'s' if rows > 1 else ''} ({copies:,} env cop{'ies' if copies > 1 else 'y'} x "
            f"{per_copy} agent{'s' if per_copy > 1 else ''})" if per_copy > 1 or (agents and copies and rows % copies == 0)
            else f"{rows:,} env{'s' if rows > 1 else ''}")


def env_rows(env: Any) -> tuple[int | None, bool]:
    """``(copies, agents)`` of :func:`~canter.distributed.explorer.rollout_array` for ``env`` (a :class:`VecEnv`, or
    the vector env it adapts): a multi-agent env's rows are its copies' agents (``n_agents`` per copy); a joint-policy
    view's (no ``n_agents``) and any other env's are envs."""
    k = getattr(getattr(env, "env", env), "n_agents", None)
    if isinstance(k, int) and k > 0 and env.num_envs % k == 0:
        return env.num_envs // k, True
    return None, False


def agent_rows(run: Any) -> bool:
    """Whether the rows of ``run``'s training env are agents' (a ``pettingzoo:`` env's, but ``policies: joint``,
    whose sub-env is a whole copy)."""
    from canter.envs.multiagent_ids import is_multiagent

    return isinstance(run.env, str) and is_multiagent(run.env) and run.policies != "joint"


#: what :func:`fitting_rollout` says (a multi-policy run tells its members' in the run's steps)
FITTING_ROLLOUT = r"--set n_steps=\d+ makes one fit|fewer envs \(--n-envs\) and n_steps 1 make one fit"


def fitting_rollout(max_steps: int, rows: int) -> str:
    """The largest ``n_steps`` whose rollout of ``rows`` env (or agent) rows fits within ``max_steps`` (a run then
    takes whole rollouts up to the budget: exactly it where it is a multiple of ``rows``); below one step per row,
    fewer envs."""
    fit = max_steps // rows
    return f"--set n_steps={fit} makes one fit" if fit >= 1 else "fewer envs (--n-envs) and n_steps 1 make one fit"


def warn_one_minibatch(config: Any, rows: int, copies: int | None = None, agents: bool = False) -> None:
    """Warn (as Stable-Baselines3 does) when ``config.batch_size`` (the minibatch size of PPO, APPO,
    TRPO's critic, ...) exceeds ``rows``, the transitions of one rollout: every minibatch is then the whole
    rollout, ``rows`` transitions, not ``batch_size``. Algorithms without ``batch_size`` are left alone.
    ``copies`` and ``agents`` (as :func:`rollout_rows` takes them) tell a multi-agent env's agent rows as
    such ("2 agent rows (1 env copy x 2 agents)", which was "2 envs"); None: the rows are envs."""
    batch_size = getattr(config, "batch_size", None)
    if isinstance(batch_size, int) and batch_size > rows > 0:
        steps = getattr(config, "n_steps", None)
        per_step = rows // steps if steps else None
        envs = ("? envs" if per_step is None else f"{per_step} envs" if copies is None
                else rollout_rows(per_step, copies, agents))
        warn(CanterWarning(
            f"hparams.batch_size ({batch_size:,}) is larger than one rollout ({rows:,} transitions: hparams.n_steps "
            f"{steps} x {envs}): each minibatch is the whole rollout; lower hparams.batch_size or raise "
            f"hparams.n_steps or n_envs"
        ))
