"""The shared trainer loop: iterations, episode statistics, evaluation, hooks, resumable state."""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from canter.agents.agent import Agent
from canter.algorithms.base import threads_for, use_threads
from canter.callbacks import EnvStep, Hooks
from canter.stop_criteria import TargetReward, builtin_callbacks
from canter.config import RunConfig
from canter.envs.vector import VecEnv
from canter.errors import CanterError, CanterWarning, warn
from canter.resume_checks import restoring
from canter.schedules import LRControl
from canter.trainers.agent_metadata import AgentMetadata
from canter.trainers.resumable import ResumableState
from canter.trainers.evaluation import EvalResult, evaluate
from canter.trainers.guard import Divergence, DivergenceGuard
from canter.trainers.records import EpisodeInfo, TrainRecord, logged_numbers
from canter.utils import global_rngs_kept, keep_freed_memory, threads_kept_in_turn



class Trainer(ResumableState, AgentMetadata):
    """Base trainer. Subclasses implement :meth:`iteration` (collect, store, learn).

    ``for record in trainer(): ...`` runs training; the loop stops when a ``should_stop`` hook
    says so (built in: target reward, step budget, wall-clock budget, early stopping; see
    :mod:`canter.callbacks`). Loggers and checkpointing wrap this generator (see
    :mod:`canter.run`); they are not part of it. Between iterations the whole training state is
    :meth:`resume_state`, which :meth:`load_resume_state` restores for an exact continuation.
    """
    def __init__(
        self, agent: Agent, env: VecEnv | None, eval_env: VecEnv | None, run: RunConfig, callbacks: Iterable[Any] = (),
    ) -> None:
        self.agent, self.env, self.eval_env, self.run = agent, env, eval_env, run
        self.link_agent(agent, run)
        self.algorithm = agent.algorithm
        self.config = agent.algorithm.config
        self.step = 0
        self.iteration_count = 0
        self.episode_count = 0
        self.best_eval_return: float | None = None
        self.best_rolling_return: float | None = None
        self.last_eval: EvalResult | None = None
        self.evaluations = 0
        self.recent_returns: deque[float] = deque(maxlen=run.reward_window)
        self.recent_successes: deque[float] = deque(maxlen=run.reward_window)
        self._pending: list[EpisodeInfo] = []
        #: whether the trainer evaluates (an eval env, and eval_episodes > 0; 0 switches evaluation off)
        self.evaluates = eval_env is not None and run.eval_episodes > 0
        self._next_eval = run.eval_every if run.eval_every > 0 and self.evaluates else None
        #: the step of the next periodic checkpoint of the :class:`~canter.run.Run` around this trainer (set by it;
        #: None: none due), where an offline iteration ends too
        self.checkpoint_due: int | None = None
        self.obs: np.ndarray | None = None
        self.wall_start = 0.0
        self.elapsed_before = 0.0
        self.hooks = Hooks([*builtin_callbacks(run), *callbacks])
        if self.no_env_steps and self.hooks.env_step_hooks():
            raise CanterError(f"on_env_step hooks are not called here: {self.no_env_steps}; use after_update or "
                              f"should_stop (they run between iterations)")
        self.lr = LRControl(self.algorithm, run)
        self.guard = DivergenceGuard(self, run.divergence_guard, run.divergence_lr_factor, run.divergence_max_restores)
        #: set (e.g. by a signal handler, or a hook: a reason, or True) to stop cleanly after the current iteration
        self.stop_requested: str | bool | None = None
        self.resume_exact: bool | None = None
        self._resume: dict[str, Any] | None = None
        #: a turn-based game's frozen opponents (run directories, checkpoints) -> the checkpoint id each was loaded
        #: from (``envs.turns.opponent_ids``), saved with the counters; those a resume found changed since
        self.opponents: dict[str, str] = {}
        self.opponents_changed: list[str] = []
        #: set by the first call: a later call continues from here (no new setup, env reset or on_train_start)
        self._started = False
        #: calls of ``__call__`` that started iterating: a generator whose call is not the latest is stale
        self._calls = 0
        self._yielded_wall = 0.0
        self._clock_stopped = self._at_record = False  # _at_record: the loop's consumer has a record

    @property
    def max_seconds(self) -> float | None:
        """The training wall-clock budget: ``run.max_seconds`` (raising it continues a trainer that it
        stopped, as raising ``run.max_steps`` does)."""
        return self.run.max_seconds

    @max_seconds.setter
    def max_seconds(self, value: float | None) -> None:
        self.run.max_seconds = value

    # -- to implement -----------------------------------------------------------------------
    def setup(self) -> None:
        """Allocate buffers; called once before the first iteration."""

    def iteration(self) -> dict[str, float]:
        """Collect data and learn once; return update statistics."""
        raise NotImplementedError

    # -- shared helpers ---------------------------------------------------------------------
    def wall_time(self) -> float:
        """Seconds of training so far (including time before a resume)."""
        if not self.wall_start or self._clock_stopped:
            return self.elapsed_before
        return self.elapsed_before + time.perf_counter() - self.wall_start

    def stop_clock(self) -> None:
        """Stop the training clock at the last record: a loop left there (``break``) is closed later, and
        the time until then (the checkpoint's and summary's wall time, a resumed run's clock) is no training."""
        self.elapsed_before, self._clock_stopped = self._yielded_wall, True

    def set_progress(self) -> None:
        """Advance the algorithm's schedules to the current step, then apply the run's LR control."""
        self.algorithm.set_progress(self.step, self.run.max_steps)
        self.lr.apply(self.step)

    def save_agent(self, path: Any) -> Any:
        """Save the agent as ``path.safetensors`` + ``path.json`` with this run's metadata as of now, as
        ``self.agent.save(path)`` does: :meth:`Agent.save <canter.agents.Agent.save>`."""
        return self.agent.save(path)

    def rolling_return(self) -> float | None:
        """Mean return of the last ``reward_window`` training episodes (None before the first)."""
        return float(np.mean(self.recent_returns)) if self.recent_returns else None

    def reward_stats(self) -> dict[str, float]:
        """xagents-style reward-buffer statistics over the last ``reward_window`` training episodes."""
        if not self.recent_returns:
            return {"episodes": float(self.episode_count)}
        r = np.asarray(self.recent_returns, dtype=np.float64)
        return {"mean": float(r.mean()), "std": float(r.std()), "min": float(r.min()), "max": float(r.max()),
                "best_mean": float(self.best_rolling_return), "episodes": float(self.episode_count)}

    @contextmanager
    def updating(self) -> Iterator[None]:
        """Float settings for gradient updates, restored afterwards: the config's float32 matmul
        precision (off-policy ``matmul_precision``) and, with the run's ``flush_denormal``,
        denormals flushed to zero (restored to off, torch's default: torch has no getter for it).
        Envs, acting and the caller's code between iterations run with the process's own settings."""
        precision = torch.get_float32_matmul_precision()
        wanted = getattr(self.config, "matmul_precision", None)
        if wanted:
            torch.set_float32_matmul_precision(wanted)
        if self.run.flush_denormal:
            torch.set_flush_denormal(True)
        try:
            yield
        finally:
            if self.run.flush_denormal:
                torch.set_flush_denormal(False)
            torch.set_float32_matmul_precision(precision)

    #: why this trainer calls no ``on_env_step`` hook (None: it does), which it then refuses in one line
    no_env_steps: str | None = None

    def stop_at_env_step(self, obs: Any, actions: Any, step: Any) -> bool:
        """Call the ``on_env_step`` hooks with the vector step just taken (``step``, after ``obs`` and
        ``actions``); True when one stopped training there: :attr:`stop_requested` holds its reason and the
        iteration under way is dropped (:meth:`drop_partial`), so the trainer returns without an update."""
        record = EnvStep(obs, actions, step.reward, step.terminated, step.truncated, step.valid,
                         getattr(self.env, "info", {}), step.obs)
        reason = self.hooks.should_stop(self, "on_env_step", record)
        if reason is None:
            return False
        self.stop_requested = reason
        self.drop_partial()
        return True

    def drop_partial(self) -> None:
        """Forget the part of an iteration collected so far (a stop at an env step), as Stable-Baselines3 drops
        a rollout that ``_on_step`` stopped: a continued or resumed run starts a new one where the env is."""

    #: the rewards ``count_step`` returns are scaled (``normalize_reward``); a replay keeps raw ones
    #: and scales them when sampled, with the statistics of that time
    scaled_rewards = True

    def count_step(self, step: Any) -> tuple[np.ndarray, np.ndarray]:
        """Count a vector step's env steps, check its data and track its rewards' return statistics;
        returns ``(done, rewards)``, scaled where :attr:`scaled_rewards`."""
        self.step += self.env.num_envs
        self.guard.check_env_data(step.obs, step.reward)
        done = step.terminated | step.truncated
        return done, self.agent.scale_reward(step.reward, done, step.valid, self.scaled_rewards)

    def record_episodes(self, steps: np.ndarray | None = None) -> None:
        """Collect episodes the env finished in its last step (``steps``: each one's step, where they ended on
        different ones: an explorer's rollout; None: all on :attr:`step`). The best rolling return is updated
        once, with the rolling mean after all of them: the means between (after some of the envs that ended on
        the step) depend on the envs' order (Stable-Baselines3's ``ep_rew_mean`` is also a mean after
        whole vector steps)."""
        env = self.env
        if env.finished_envs.size:
            now = self.wall_time()
            success = getattr(env, "finished_success", None)  # envs that report no success have none
            if success is not None and len(success) == len(env.finished_returns):
                self.recent_successes.extend(float(x) for x in success if x == x)  # NaN: not reported
            labels = getattr(env, "row_labels", None) or {}
            names = {k: v[env.finished_envs].tolist() for k, v in labels.items()}
            for i, (ret, length) in enumerate(zip(env.finished_returns.tolist(), env.finished_lengths.tolist())):
                self.recent_returns.append(ret)
                self.episode_count += 1
                rolling = float(np.mean(self.recent_returns))
                self._pending.append(EpisodeInfo(self.step if steps is None else int(steps[i]), now, ret, length, rolling,
                                                 **{k: v[i] for k, v in names.items()}))
            if self.best_rolling_return is None or rolling > self.best_rolling_return:
                self.best_rolling_return = rolling

    def evaluate(self) -> EvalResult:
        """Evaluation on the eval env (seeded per evaluation), of the deterministic policy or, with the run's
        ``eval_deterministic: false``, of the policy's samples from a generator of their own seeded with the same
        seed (the training streams untouched). The global streams (Python's, NumPy's, torch's) are put back as
        they were: an eval env that draws from them (``np.random.rand``) changed the training that followed."""
        assert self.eval_env is not None
        seed = self.run.seed + 1_000_003 + 7919 * self.evaluations
        self.evaluations += 1
        with global_rngs_kept():
            return evaluate(self.agent, self.eval_env, self.run.eval_episodes, seed=seed,
                            deterministic=self.run.eval_deterministic)

    def state(self) -> dict[str, Any]:
        """Counters to save with a checkpoint (JSON)."""
        return {
            "step": self.step, "iteration": self.iteration_count, "episodes": self.episode_count,
            "best_eval_return": self.best_eval_return, "evaluations": self.evaluations,
            "last_eval_return": None if self.last_eval is None else self.last_eval.mean_return,
            "best_rolling_return": self.best_rolling_return, "lr_scale": self.lr.scale,
            "wall_time": self._yielded_wall if self._at_record else self.wall_time(),  # a record's: no save time
            "divergence_events": list(self.guard.events),
            **({"opponents": dict(self.opponents)} if self.opponents else {}),
        }

    #: whether a non-finite evaluation was warned about (once a trainer)
    _warned_nonfinite_eval: bool = False

    #: whether :meth:`close` closed the envs: a later call is refused (closed envs were stepped on, or a traceback)
    closed: bool = False

    def close(self) -> None:
        """Close the training and evaluation envs."""
        self.closed = True
        self.remember_metadata(strict=False)
        if self.env is not None:
            self.env.close()
        if self.eval_env is not None:
            self.eval_env.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: Any) -> None:
        """The end of a ``with`` block closes the envs, as :meth:`Run.__exit__ <canter.run.Run.__exit__>` does."""
        self.close()

    # -- the loop ----------------------------------------------------------------------------
    def _evaluation(self) -> tuple[EvalResult, bool]:
        """Evaluate, update the best return, call the hooks; returns the result and whether it is a new best."""
        result = self.evaluate()
        self.last_eval = result
        finite = bool(np.isfinite(result.mean_return))  # a NaN best would never be beaten again
        if not finite and not self._warned_nonfinite_eval:  # else the run ended 'best eval return n/a', unexplained
            self._warned_nonfinite_eval = True
            warn(CanterWarning(f"the evaluation at step {self.step} returned a mean return of {result.mean_return} "
                               f"(its episode returns were not finite: the env's rewards NaN or infinite in the "
                               f"evaluation episodes); such an evaluation is never the best (warned once a run)"))
        new_best = finite and (self.best_eval_return is None or result.mean_return > self.best_eval_return)
        if new_best:
            self.best_eval_return = result.mean_return
        if finite:
            self.guard.remember()
        self.hooks.call("on_evaluate", self, result)
        if new_best:
            self.hooks.call("on_best", self, result)
        return result, new_best

    def _iterate(self) -> dict[str, float]:
        try:
            losses = logged_numbers(self.iteration(), self.run.algo)  # a 0-d tensor from learn() as its number
            self.guard.check_update(losses)
        except Divergence as err:
            return self.handle_divergence(err)
        return self.with_lr(losses)

    def handle_divergence(self, err: Divergence) -> dict[str, float]:
        """The divergence guard's answer to ``err`` (:meth:`DivergenceGuard.handle`: restore the last good state and
        go on, the record's losses empty, or raise :class:`TrainingDiverged`), found in an iteration or in what an
        ``after_update`` hook added; a trainer whose copies of the weights must follow a restore extends it."""
        return self.guard.handle(err)

    def with_lr(self, losses: dict[str, float]) -> dict[str, float]:
        """``losses`` with its ``learning_rate`` the first optimizer's rate now, where the LR control changes it
        (an algorithm reports its configured ``lr``) or may change it (:meth:`_shows_lr`); a multi-policy run's
        members each give theirs, logged as ``policy/learning_rate``."""
        reported = "learning_rate" in losses
        if losses and (self.lr.active if reported else self._shows_lr()):
            losses["learning_rate"] = next(iter(self.lr.current().values()))
        return losses

    def _shows_lr(self) -> bool:
        """Whether the run's LR control may change the rates of an algorithm that reports none (DQN, SAC, ...):
        plateau reductions, ``lr_decay`` or ``min_lr``. Its updates then carry ``learning_rate``, the first
        optimizer's rate, so a reduction shows in ``updates.parquet`` and TensorBoard."""
        r = self.run
        return isinstance(self.lr, LRControl) and (r.plateau_patience is not None or r.lr_decay != "constant"
                                                   or r.min_lr > 0)

    def requested_stop(self) -> str | None:
        """:attr:`stop_requested` as a stop reason: a string as it is, ``True`` as ``"stop_requested"`` (as a
        callback's True is named), a false value (``False``, ``""``) as no request."""
        asked = self.stop_requested
        if not asked:
            return None
        return asked if isinstance(asked, str) else "stop_requested"

    def blas_takes_threads(self) -> bool:
        """Whether the run's threads go to NumPy's BLAS (:func:`~canter.algorithms.base.use_threads`):
        the algorithm multiplies through NumPy and no explorers run beside the learner (OpenBLAS's
        threads keep spinning between calls, on cores the explorers need)."""
        return self.algorithm.numpy_products and not self.run.explorers

    def __call__(self) -> Iterator[TrainRecord]:
        """Run training, yielding one :class:`TrainRecord` per iteration.

        A later call (after breaking out of the loop, or after raising ``trainer.run.max_steps``)
        continues where the last one stopped: the same buffers, episodes and counters, with the
        wall-clock time between the calls not counted. A trainer that has met its stop condition
        (budget, target, a callback's ``should_stop``) yields nothing more. An earlier call's generator,
        resumed after a later call started, raises a :class:`CanterError` instead of training on.
        It trains at the run's thread counts (torch's, NumPy's BLAS), putting the caller's back when it ends
        (or is closed: a loop left with ``break``).
        """
        if self.closed:
            raise CanterError("this trainer is closed (trainer.close(), or its with block ended): its envs are closed; "
                              "make a new one, or continue a run directory with canter.resume(run_dir)")
        with threads_kept_in_turn():  # another trainer's loop may run between this one's records
            yield from self._call_records()

    def _call_records(self) -> Iterator[TrainRecord]:
        """:meth:`__call__`'s generator, at the run's thread counts."""
        threads = getattr(self.agent, "torch_threads", None)
        threads = self.run.torch_threads or threads or threads_for(self.algorithm.hidden_width())
        use_threads(threads, self.blas_takes_threads())
        self._calls = call = self._calls + 1
        if self._started:
            self.stop_requested = None  # honoured by the last call, which it stopped: this call is asked to go on
            self.elapsed_before = self._yielded_wall  # up to the last record: the pause is not training
            self._clock_stopped = False
            self.wall_start = time.perf_counter()  # before the stop check: a time budget must not count the pause
            if self.hooks.should_stop(self) is not None:
                self.stop_clock()
                return
        else:
            if self.run.keep_freed_memory:
                keep_freed_memory()
            self.setup()
            self.obs = self.env.reset(seed=self.run.seed) if self.env is not None else None
            if self._resume is not None:
                with restoring(self.resume_source):
                    self.load_resume_state(self._resume)
                self._resume = None
            self._started = True
            self.wall_start = time.perf_counter()
            self.guard.arm()
            self.guard.remember(keep_restored=True)  # a resumed run keeps its saved last good state
            self.hooks.call("on_train_start", self)
        last_time, last_step = self.wall_start, self.step
        while True:
            self.hooks.call("before_collect", self)
            losses = self._iterate()
            self.iteration_count += 1
            before = dict(losses)
            self.hooks.call("after_update", self, losses)
            try:  # a non-finite statistic a hook added (or changed) is seen as the algorithm's losses are
                self.guard.check_added(losses, before)
            except Divergence as err:
                losses = self.handle_divergence(err)
            result, new_best = None, False
            due_eval = self._next_eval is not None and self.step >= self._next_eval
            at_end = self.step >= self.run.max_steps
            if self.evaluates and (due_eval or at_end):
                result, new_best = self._evaluation()
                while self._next_eval is not None and self._next_eval <= self.step:
                    self._next_eval += self.run.eval_every
            # a budget or target met in this iteration wins over a stop signal that came in it: the run
            # is finished (a resume would otherwise take one more iteration past max_steps)
            reason = self.hooks.should_stop(self) or self.requested_stop()
            if reason is not None and result is None and self.evaluates and reason != "interrupted":
                # training ends here (time budget, a callback): evaluate the final policy, as at max_steps.
                # Not after Ctrl-C: that stops promptly and an evaluation would change the resumed run
                result, new_best = self._evaluation()
                target = self.hooks.find(TargetReward)
                if target is not None and target.reached:  # as at max_steps, whose last evaluation comes before
                    reason = "target_reward"  # the stop check: the target, first of the stop reasons, wins
            self.remember_metadata()  # what agent.save writes once this trainer is gone
            # a record every log_every iterations, at each evaluation and where a periodic checkpoint is due (the
            # Run saves it at a record: log_every, a logging setting, had thinned the checkpoints)
            due = self.checkpoint_due is not None and self.step >= self.checkpoint_due
            off_grid = bool(self.iteration_count % self.run.log_every) and result is None and not due
            if reason is None and off_grid:
                continue
            if off_grid and reason == "interrupted":  # a stop signal between two logged iterations: the record
                losses = {}  # has the pending episodes, not the losses an uninterrupted run does not log either
            now = time.perf_counter()
            sps = (self.step - last_step) / max(now - last_time, 1e-9)
            last_time, last_step = now, self.step
            episodes, self._pending = self._pending, []
            self._yielded_wall, self._at_record = self.wall_time(), True
            yield TrainRecord(
                step=self.step, iteration=self.iteration_count, wall_time=self._yielded_wall, steps_per_second=sps,
                episodes=episodes, rolling_return=self.rolling_return(), losses=losses, evaluation=result,
                best_eval_return=self.best_eval_return, new_best=new_best, done=reason is not None,
                stop_reason=reason, best_rolling_return=self.best_rolling_return,
                success_rate=float(np.mean(self.recent_successes)) if self.recent_successes else None,
                stop_only=bool(off_grid and reason == "interrupted"))
            self._at_record = False
            if self.closed and reason is None:  # close() (a with block's end) came while the loop waited here: its
                # envs are closed (at the last record, done, nothing more is stepped: the loop ends as it would)
                raise CanterError("this trainer was closed (trainer.close(), or its with block ended) while this loop "
                                  "over trainer() was left at a record: its envs are closed; make a new one, or "
                                  "continue a run directory with canter.resume(run_dir)")
            if call != self._calls:  # a later call went on with the training (maybe to its end) meanwhile
                raise CanterError("this loop over trainer() was left for a later trainer() call, which continues "
                                  "the same training; iterate only the latest call's records")
            if reason is not None:  # the clock stops at this record: saving 'last' and the summary is no training
                self.stop_clock()
                return
