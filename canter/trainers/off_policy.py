"""The off-policy trainer: act, store in a replay buffer, take gradient steps at a set ratio."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.agents.agent import Agent
from canter.algorithms.offpolicy import phase_gradient_steps
from canter.envs.random_actions import random_env_actions
from canter.data.framestack import FrameStackReplay, PrioritizedFrameStackReplay
from canter.data.her import HerReplayBuffer, check_goal_env
from canter.data.pixel_columns import pixel_columns_buffer
from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from canter.envs.atari_rgb import frame_channels
from canter.envs.goals import GoalLayout
from canter.envs.make import make_env
from canter.envs.multiagent import is_multiagent
from canter.errors import CanterError, CanterWarning, warn
from canter.envs.vector import Step
from canter.trainers.stepwise import StepwiseTrainer
from canter.trainers.updates import mean_stats, minibatches_fit
from canter.utils import stream_rng, to_numpy


def random_actions(agent: Agent, n: int, rng: np.random.Generator,
                   obs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random actions for warm-up: ``(env_actions, algorithm_actions)`` for ``n`` envs
    (among the allowed ones where the observations ``obs`` carry an action mask).

    Squashed Box actions are drawn in [-1, 1] (algorithm space) and rescaled for the env; a Box of integers
    draws its whole numbers ``low..high`` uniformly, as gymnasium's ``Box.sample`` (rounding a draw in [-1, 1]
    gave each bound half the chance of the numbers between), and stores them scaled, as Stable-Baselines3
    does. Algorithm actions of a Box space are flat ``[n, prod(shape)]``, as the policies output them.
    """
    space = agent.action_space
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) or (
            agent.algorithm.squashed_actions and np.issubdtype(space.dtype, np.integer)):
        a = random_env_actions(space, n, rng, obs, agent.observation_space)
        return a, agent.from_env_actions(a)
    if agent.algorithm.squashed_actions:
        a = rng.uniform(-1.0, 1.0, size=(n, int(np.prod(space.shape)))).astype(np.float32)
        return agent.to_env_actions(a), a
    a = random_env_actions(space, n, rng).astype(np.float32)  # the same draws, in the same order
    return a, a.reshape(n, -1)


def make_replay_buffer(agent: Agent, config: Any, capacity: int, n_envs: int, seed: int,
                       frame_stack: int = 0, goals: GoalLayout | None = None) -> ReplayBuffer:
    """The replay buffer ``config`` asks for (uniform or prioritized, 1- or n-step) for ``n_envs`` streams.

    ``frame_stack`` > 0: observations are frame stacks (Atari) of frames of that many channels (1 grayscale, 3 RGB:
    :func:`canter.envs.atari_rgb.frame_channels`); each frame is then stored once (:mod:`canter.data.framestack`).
    ``goals``: the goal env's layout, for hindsight replay
    (``her_goals`` > 0, :class:`~canter.data.her.HerReplayBuffer`). Packed float observations with images keep
    their pixels as bytes (:mod:`canter.data.pixel_columns`).
    """
    obs_space, act_space = agent.observation_space, agent.action_space
    discrete = isinstance(act_space, gym.spaces.Discrete)
    integers = discrete or isinstance(act_space, gym.spaces.MultiDiscrete)  # MultiDiscrete: one index per entry
    args = (capacity, obs_space.shape, () if discrete else (int(np.prod(act_space.shape)),))  # Box: flat
    kwargs: dict[str, Any] = dict(
        obs_dtype=obs_space.dtype, act_dtype=np.int64 if integers else np.float32, gamma=config.gamma,
        seed=seed, n_envs=n_envs, n_step=getattr(config, "n_step", 1),
    )
    if getattr(config, "her_goals", 0):
        if goals is None:
            raise ValueError("hindsight replay needs the goal env's layout")
        buffer: ReplayBuffer = pixel_columns_buffer(HerReplayBuffer, obs_space, *args, layout=goals,
                                                    her_goals=config.her_goals, strategy=config.her_strategy, **kwargs)
    elif getattr(config, "prioritized", False):
        per = dict(alpha=config.per_alpha, beta0=config.per_beta0, eps=config.per_eps)
        buffer = (PrioritizedFrameStackReplay(*args, **per, **kwargs, frame_channels=int(frame_stack)) if frame_stack
                  else pixel_columns_buffer(PrioritizedReplayBuffer, obs_space, *args, **per, **kwargs))
    else:
        buffer = (FrameStackReplay(*args, frame_channels=int(frame_stack), **kwargs) if frame_stack
                  else pixel_columns_buffer(ReplayBuffer, obs_space, *args, **kwargs))
    if getattr(agent, "ret_rms", None) is not None:  # normalize_reward: each step's raw reward scaled and clipped when sampled
        buffer.reward_transform = agent.scaled
    return buffer


#: the most rows a training phase draws at once (phase batching); larger phases (huge batches) draw
#: minibatch by minibatch, as a phase of batch 10,000 x 128 steps took 3 GB at once
PHASE_ROWS = 1 << 16


def fitting_phase(max_steps: int, n_envs: int) -> str:
    """The largest ``train_freq`` (in steps) whose training phase, whole vector steps of ``n_envs`` env (or agent)
    rows, fits within ``max_steps``; below one step per row, fewer envs."""
    fit = max_steps // n_envs * n_envs
    return f"--set train_freq={fit} makes one fit" if fit >= 1 else "fewer envs (--n-envs) and train_freq 1 make one fit"


class OffPolicyTrainer(StepwiseTrainer):
    """Each iteration collects ``train_freq`` env steps, then takes ``gradient_steps`` updates.

    With ``train_freq_unit: episode`` a collection phase lasts until ``train_freq`` episodes have
    finished since it began, summed over the env copies and checked after each vector step (several
    copies ending on one step may take it past ``train_freq``; the count restarts at 0), or until the
    run's ``max_steps``; ``gradient_steps: -1`` takes one update per env step the phase collected.

    Before ``learning_starts`` env steps, actions are uniform random; the first training phase is
    the first to end past ``learning_starts`` (``step > learning_starts``, as in Stable-Baselines3,
    so a phase ending exactly there does not train yet). Every vector step enters
    the buffer (reset-only steps as episode boundaries, see :class:`~canter.data.ReplayBuffer`);
    the next observation of an episode's last step is its real final observation, so truncated
    episodes bootstrap correctly. The buffer keeps raw observations and rewards; the agent's
    normalisation statistics (every observation and reward, the random warm-up's included) are
    applied when a batch is sampled.
    """

    scaled_rewards = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:  # a run that cannot relabel goals fails here, before anything is written
            self.goals = self.goal_layout()
        except BaseException:
            self.close()
            raise
        starts, budget = self.config.learning_starts, self.run.max_steps
        n_envs = self.env.num_envs if self.env is not None else 1
        by_episode = getattr(self.config, "train_freq_unit", "step") == "episode"
        # whole vector steps, as setup() counts; an episode phase ends at the budget at the latest
        phase = n_envs if by_episode else max(1, math.ceil(self.config.train_freq / n_envs)) * n_envs
        fits = self.cycle_budget  # a multi-policy member's whole phases: its share of max_steps, rounded down
        if phase > fits and not by_episode:  # the budget is checked between phases, as on-policy between rollouts
            warn(CanterWarning(
                f"max_steps ({fits:,}) is less than one training phase (train_freq {self.config.train_freq:,} on "
                f"{n_envs} env{'s' if n_envs > 1 else ''} = {phase:,} steps; {fitting_phase(fits, n_envs)}): "
                f"the run takes {phase:,} steps"
            ))
        if starts >= -(-budget // phase) * phase:  # the step of the last phase's end: its training is the first
            warn(CanterWarning(
                f"learning_starts ({starts}) >= max_steps ({budget}): the run only collects random actions and "
                f"never learns"
            ))

    def make_buffer(self) -> ReplayBuffer:
        """Build the replay buffer the config asks for (uniform or prioritized, 1- or n-step)."""
        return make_replay_buffer(self.agent, self.config, self.config.buffer_size, self.env.num_envs, self.run.seed,
                                  frame_stack=frame_channels(self.run.env, self.run.env_kwargs), goals=self.goals)

    def goal_layout(self) -> GoalLayout | None:
        """The goal env's layout when the run uses hindsight replay (``her_goals`` > 0), else None
        (:attr:`goals` holds it). Its env (one more copy, made as the run's are, for
        ``compute_reward``) closes with the trainer."""
        if not getattr(self.config, "her_goals", 0):
            return None
        run = self.run
        if is_multiagent(run.env):
            raise CanterError(f"her_goals needs a single-agent goal env; '{run.env}' is a multi-agent env")
        if self._goal_env is None:
            self._goal_env = make_env(run.env, **run.env_kwargs)
        layout = GoalLayout(self._goal_env, run.env)
        check_goal_env(layout, self._goal_env, run.env)
        return layout

    def close(self) -> None:  # noqa: D102
        super().close()
        if self._goal_env is not None:
            env, self._goal_env = self._goal_env, None
            try:  # as the training and evaluation envs' close (VecEnv.close): a warning, not the run's end traceback
                env.close()
            except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
                from canter.envs.vector import warn_close_error

                warn_close_error(self.run.env, exc)

    _goal_env: gym.Env | None = None

    def setup(self) -> None:  # noqa: D102
        super().setup()
        try:
            self.buffer = self.make_buffer()
        except (MemoryError, ValueError) as exc:  # NumPy's allocation error names the size, as its size limit does
            if isinstance(exc, ValueError) and not any(w in str(exc) for w in ("too big", "dimension exceeded")):
                raise  # not NumPy's 'array is too big' (buffer_size 1e18 was that ValueError's traceback)
            n_step = getattr(self.config, "n_step", 1)  # the n-step buffer holds n_step transitions per env too
            also = f" or hparams.n_step (it is {n_step})" if n_step > 1 else ""
            raise CanterError(f"the replay buffer does not fit in memory ({exc}); lower hparams.buffer_size "
                              f"(it is {self.config.buffer_size}){also}") from None
        self.rng = stream_rng(self.run.seed, "warmup")
        self.vec_steps = max(1, math.ceil(self.config.train_freq / self.env.num_envs))
        self.by_episode = getattr(self.config, "train_freq_unit", "step") == "episode"
        #: episodes finished in the phase under way (``train_freq_unit: episode``); env steps of the phase that ended
        self.phase_episodes = self.phase_steps = 0
        self._reset_noise = getattr(self.algorithm, "reset_noise", None)
        self._new_phase = getattr(self.algorithm, "new_phase", None)  # SAC's gSDE resamples per phase
        self._warmup_step = getattr(self.algorithm, "warmup_step", None)  # ... counting the warm-up's steps too
        self._buffer_progress = getattr(self.buffer, "set_progress", None)
        self._update_priorities = getattr(self.buffer, "update_priorities", None)
        self._phase_batching = getattr(self.algorithm, "phase_batching", False) and self._update_priorities is None
        #: the buffer scales the rewards it samples (normalize_reward): the agent leaves them as they are
        self._buffer_scales = getattr(self.buffer, "reward_transform", None) is not None
        self._keeps_infos = bool(getattr(self.buffer, "info_keys", ()))

    def data_state(self) -> dict[str, Any]:
        """The replay buffer (raw rewards: ``rewards_raw``; canter before 2026-11-25 stored them
        scaled) and the warm-up action generator."""
        return {"buffer": self.buffer.state_dict(), "warmup_rng": self.rng.bit_generator.state, "rewards_raw": True,
                "phase_episodes": self.phase_episodes}

    def load_data_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`data_state`; after a resume that reset the env (fresh episodes, :attr:`resume_exact`
        False) the replay buffer's running episodes end there (:meth:`ReplayBuffer.new_episodes
        <canter.data.ReplayBuffer.new_episodes>`) and the per-env exploration noise restarts too (TD3/DDPG's
        Ornstein-Uhlenbeck process), as at an episode end."""
        self.buffer.load_state_dict(state["buffer"])
        self.rng.bit_generator.state = state["warmup_rng"]
        self.phase_episodes = int(state.get("phase_episodes", 0))  # a multi-policy member's phase under way
        if self.resume_exact is False:  # the replay's running episodes end here, and the noise restarts
            new_episodes = getattr(self.buffer, "new_episodes", None)  # a user's buffer (make_buffer) may lack it
            if new_episodes is not None:
                new_episodes()
            if self._reset_noise is not None:  # whatever the buffer
                self._reset_noise(torch.ones(self.env.num_envs, dtype=torch.bool))

    def drop_partial(self) -> None:
        """End the collection phase under way (a stop at an env step); its transitions stay in the replay."""
        super().drop_partial()
        self.phase_episodes = 0

    def _random_actions(self) -> tuple[np.ndarray, np.ndarray]:
        return random_actions(self.agent, self.env.num_envs, self.rng, self.obs)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Advance the schedules, then exploring actions (uniform random before ``learning_starts``)."""
        self.set_progress()
        rows = getattr(self.env, "observed", None)  # None: every row is a real observation (single-agent envs)
        if self.step < self.config.learning_starts:
            if self.agent.obs_rms is not None:  # the statistics see the warm-up's observations too
                self.agent.update_obs_stats(obs, rows)
            env_actions, self._actions = self._random_actions()
            if self._warmup_step is not None:
                self._warmup_step()
        else:
            env_actions, _, out = self.agent.sample(obs) if rows is None else self.agent.sample(obs, rows)
            self._actions = to_numpy(out.actions)
        return env_actions

    def observe(self, step: Step) -> bool:
        """Store the step in the replay buffer; True at the end of a collection phase (:meth:`phase_over`)."""
        done, reward = self.count_step(step)
        infos = {"info": self.env.info} if self._keeps_infos else {}  # hindsight replay: the keys compute_reward reads
        self.buffer.add(self.obs, self._actions, reward, step.obs, step.terminated, step.valid, step.truncated, **infos)
        # the OU noise restarts at an episode's end and again after the reset-only step that follows it (NEXT_STEP
        # autoreset: its action, ignored, advanced the process), so a new episode's first action has had one
        # increment from zero, as Stable-Baselines3's (whose envs reset on the step that ends the episode)
        restart = done | ~step.valid
        if self._reset_noise is not None and restart.any():
            self._reset_noise(torch.from_numpy(restart))
        finished = self.env.finished_envs.size
        self.record_episodes()
        self.obs = step.obs
        return self.phase_over(finished)

    def phase_over(self, finished: int) -> bool:
        """Count a vector step of the phase and the ``finished`` episodes it ended; True at the phase's end (after
        ``train_freq`` env steps; ``train_freq_unit: episode``: ``train_freq`` episodes, or ``max_steps``), with
        :attr:`phase_steps` the env steps it collected."""
        n = self.env.num_envs
        if not self.by_episode:
            self.phase_steps = self.vec_steps * n
            return self.due(self.vec_steps)
        self.collected += 1
        self.phase_episodes += finished
        if self.phase_episodes < self.config.train_freq and self.step < self.run.max_steps:
            return False
        self.phase_steps, self.collected, self.phase_episodes = self.collected * n, 0, 0
        return True

    def update(self) -> dict[str, float]:
        """The gradient steps (none before ``learning_starts``); the next collection phase starts after them."""
        if self._new_phase is not None:
            self._new_phase()
        if self.step <= self.config.learning_starts or len(self.buffer) == 0:
            return {}  # as Stable-Baselines3: the first phase trains once step > learning_starts
        stats = self.train(phase_gradient_steps(self.config, self.phase_steps))
        # the exploration rate the actions now take (DQN's epsilon); not Ape-X's learner (explorers explore)
        rates = getattr(self.algorithm, "exploration_stats", None)
        return {**stats, **rates()} if stats and rates is not None else stats

    def train(self, gradient_steps: int) -> dict[str, float]:
        """Advance the schedules to the current step, then take ``gradient_steps`` updates; mean stats."""
        c = self.config
        self.set_progress()
        if self._buffer_progress is not None:
            self._buffer_progress(self.step, self.run.max_steps)
        with minibatches_fit(c.batch_size):  # an allocation failure is a one-line error naming batch_size
            return self._train(gradient_steps)

    def _train(self, gradient_steps: int) -> dict[str, float]:
        """The ``gradient_steps`` updates of :meth:`train`; their mean stats."""
        agent, buf, c = self.agent, self.buffer, self.config
        with self.updating():  # matmul precision and denormal flushing for the updates only
            if self._phase_batching and 1 < gradient_steps and c.batch_size * gradient_steps <= PHASE_ROWS:
                # uniform replay: one draw of all the phase's minibatches is distributed exactly like
                # ``gradient_steps`` separate draws, and lets the algorithm batch its target pass
                batch = agent.prepare_replay_batch(buf.sample(c.batch_size * gradient_steps), not self._buffer_scales)
                all_stats = agent.learn_phase(batch, gradient_steps)
            else:
                all_stats = []
                for _ in range(gradient_steps):
                    batch = agent.prepare_replay_batch(buf.sample(c.batch_size), not self._buffer_scales)
                    all_stats.append(agent.learn(batch))
                    if self._update_priorities is not None and self.algorithm.last_priorities is not None:
                        self._update_priorities(batch.indices, self.algorithm.last_priorities)
        return self.algorithm.carry_stats(mean_stats(all_stats))
