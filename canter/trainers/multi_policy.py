"""Several policies in one multi-agent env (run config ``policies: type | agent``).

Each policy gets a *member*: an ordinary trainer of its algorithm's family (on- or off-policy; a
policy held fixed, ``algo: random`` or ``frozen: true``, a :class:`~canter.trainers.fixed.FixedTrainer`)
with its own :class:`~canter.agents.Agent`, buffer, schedules and updates, whose env is the view
of its agents' rows (:class:`~canter.envs.multiagent_views.MultiPolicyVecEnv`). The
:class:`MultiPolicyTrainer` steps the one env for all members in lockstep (every member acts,
the env steps once, every member takes in its rows) and lets each member update when its own
cycle is due, so algorithms and trainers run unchanged (independent learners, as in
independent PPO / DQN). Everything around the members is the shared trainer loop: evaluation
of all policies together, hooks, checkpoints, exact resume.

Step counts: the run's ``step`` is every agent's steps together (as with a shared policy); a
member counts its own agents' steps, and its step budget is its share of ``max_steps``, so
its schedules (learning rate, exploration, clipping) run over the same fraction of the run.
Its ``learning_starts`` and ``train_freq`` count its own agents' steps.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from canter.agents.multi import MultiPolicyAgent
from canter.data.rollout import RolloutBuffer
from canter.config import RunConfig
from canter.envs.multiagent_views import MultiPolicyVecEnv
from canter.envs.vector import Step
from canter.errors import CanterError, CanterWarning, warn
from canter.held_warnings import warnings_taken
from canter.multiagent_config import frozen_ignored, policy_message
from canter.schedules import LRControl
from canter.trainers.base import Trainer
from canter.trainers.on_policy import FITTING_ROLLOUT, fitting_rollout
from canter.trainers.stepwise import StepwiseTrainer
from canter.trainers.guard import Divergence


class LRGroup:
    """The members' learning-rate controllers seen as one (plateau and divergence reductions
    reach every policy; each applies its decay at its own step)."""

    def __init__(self, members: dict[str, StepwiseTrainer]) -> None:
        self.members = members

    @property
    def controls(self) -> list[LRControl]:
        """Each member policy's learning-rate controller."""
        return [m.lr for m in self.members.values()]

    @property
    def active(self) -> bool:
        """Whether any member's rate is being changed by a schedule or reduction."""
        return any(c.active for c in self.controls)

    @property
    def scale(self) -> float:
        """The shared reduction scale (the same for every member)."""
        return self.controls[0].scale

    def apply(self, step: int) -> None:
        """Every member's rates at its own step (``step``, the run's, is not a member's)."""
        for m in self.members.values():
            m.lr.apply(m.step)

    def reduce(self, factor: float) -> None:
        """Multiply every member's rates by ``factor``."""
        for c in self.controls:
            c.reduce(factor)

    def at_min_lr(self) -> bool:
        """True when every member's rates are at ``min_lr`` (:meth:`LRControl.at_min_lr`)."""
        return all(c.at_min_lr() for c in self.controls)

    def current(self) -> dict[str, float]:
        """Every member's rates, ``policy.optimizer.index -> lr``."""
        return {f"{p}.{k}": v for p, m in self.members.items() for k, v in m.lr.current().items()}

    def state_dict(self) -> dict[str, Any]:
        """Each member's controller state, by policy name."""
        return {p: m.lr.state_dict() for p, m in self.members.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved."""
        for p, m in self.members.items():
            m.lr.load_state_dict(state[p])


def _run_steps(message: str, rows: int, all_rows: int, max_steps: int) -> str:
    """A member's "the run takes N steps" (its whole rollout or training phase, of its own ``rows``) told as the
    policy's steps and the run's: every agent row steps with it, so the run takes ``N / rows * all_rows`` or more;
    and the ``n_steps`` that makes a rollout fit, the run's (``max_steps`` over all its rows), not the policy's share;
    and the member's budget in "learning_starts (S) >= max_steps (N)" (rounded up to whole steps) and "max_steps (N)
    is less than one rollout / training phase" (rounded down), with the policy's exact share of ``max_steps``."""
    def told(match: re.Match[str]) -> str:
        steps = int(match[1].replace(",", ""))
        return f"this policy takes {steps:,} of its steps, the run at least {-(-steps // rows) * all_rows:,}"

    exact = max_steps * rows / all_rows  # the policy's share, not the whole steps its member trainer counts
    share = f"{int(exact):,}" if exact.is_integer() else f"{exact:,.2f}"
    message = re.sub(FITTING_ROLLOUT, lambda _: fitting_rollout(max_steps, all_rows), message)
    told_share = f"its share of max_steps ({rows}/{all_rows} of {max_steps:,}: {share} steps)"
    message = re.sub(r"learning_starts \(([\d,]+)\) >= max_steps \([\d,]+\)",
                     lambda m: f"learning_starts ({m[1]}) >= {told_share}", message)
    message = re.sub(r"^max_steps \([\d,]+\) is less than one ", lambda _: f"{told_share} is less than one ", message)
    return re.sub(r"the run takes ([\d,]+) steps$", told, message)


class MultiPolicyTrainer(Trainer):
    """One member trainer per policy (``member_cls``: one class for all, or one per policy, the family's of its
    algorithm), stepped in lockstep on one multi-agent env (module docstring)."""

    def __init__(self, agent: MultiPolicyAgent, env: MultiPolicyVecEnv, eval_env: Any, run: RunConfig,
                 member_cls: type[StepwiseTrainer] | dict[str, type[StepwiseTrainer]],
                 callbacks: Iterable[Any] = ()) -> None:
        classes = member_cls if isinstance(member_cls, dict) else dict.fromkeys(env.policies, member_cls)
        if not all(issubclass(cls, StepwiseTrainer) for cls in classes.values()):
            raise CanterError(f"{run.algo} cannot train several policies (its trainer steps the env its own way); "
                              f"use policies: shared")
        super().__init__(agent, env, eval_env, run, callbacks=callbacks)
        self.members: dict[str, StepwiseTrainer] = {}
        #: each policy's share of the run's agents (of its steps, so of ``max_steps``)
        self.shares = {p: view.num_envs / env.num_envs for p, view in zip(env.policies, env.views)}
        for i, (policy, view) in enumerate(zip(env.policies, env.views)):
            member_run = dataclasses.replace(run, seed=run.seed + i, max_steps=self.member_budget(policy))
            # the run ends on whole iterations of all agent rows: a member's cycle fits only within its share of
            # max_steps rounded down (34 steps of 1 of 3 rows are the run's 102, past max_steps 100)
            whole = run.max_steps * view.num_envs // env.num_envs
            caught: list[warnings.WarningMessage] = []
            with warnings_taken(caught):
                with self._told_as(policy):
                    self.members[policy] = classes[policy](agent.agents[policy], view, None, member_run,
                                                           cycle_budget=whole)
                agent.agents[policy].run_config = None  # a member's run: not an env canter.evaluate could act on
                self.members[policy].resolves_own_config = False  # its run is this one's: no config of its own
            for w in caught:  # a member's budget warnings speak of its share of the steps
                detail = (f" ({view.num_envs} of the {env.num_envs} agent rows of all env copies, so "
                          f"{view.num_envs}/{env.num_envs} of the run's {run.max_steps:,} steps)")
                message = _run_steps(str(w.message), view.num_envs, env.num_envs, run.max_steps)
                warn(type(w.message)(policy_message(run, policy, message, detail)))
        for policy in env.policies:  # a frozen policy never updates: its training hyperparameters never act
            ignored = frozen_ignored(run, policy)
            if ignored:
                warn(CanterWarning(f"policy '{policy}' is frozen (frozen: true) and never trained: its "
                                   f"policy_hparams {', '.join(ignored)} are ignored"))
        self.lr = LRGroup(self.members)

    def member_budget(self, policy: str) -> int:
        """A policy's step budget: its share of the run's ``max_steps`` (read anew each iteration, so a
        raised ``trainer.run.max_steps`` stretches every policy's schedules too)."""
        return max(1, math.ceil(self.run.max_steps * self.shares[policy]))

    @contextlib.contextmanager
    def _told_as(self, policy: str) -> Iterator[None]:
        """A member's errors (a buffer too big for memory) named as its policy's, and its own settings'."""
        try:
            yield
        except CanterError as exc:
            raise CanterError(policy_message(self.run, policy, str(exc))) from None

    def setup(self) -> None:  # noqa: D102
        for p, m in self.members.items():
            with self._told_as(p):
                m.setup()

    def iteration(self) -> dict[str, float]:
        """Lockstep vector steps until every member has updated once (a member whose cycle is
        shorter may update more often); each member's last statistics, ``policy/name``."""
        for p, m in self.members.items():  # the run's budget may have been raised since the last call
            m.run.max_steps = self.member_budget(p)
        waiting = set(self.members)
        stats: dict[str, float] = {}
        hooked = bool(self.hooks.env_step_hooks())
        while waiting:
            actions = {}
            obs = self.obs
            for p, m in self.members.items():
                m.obs = obs[p]  # what the member acts on and (off-policy) stores
                actions[p] = m.act(m.obs)
            step = self.env.step(actions)
            due = []
            for p, m in self.members.items():
                try:
                    if m.observe(step.steps[p]):
                        due.append(p)
                except Divergence as err:  # found by the member's guard: named by policy, at the run's step
                    raise Divergence(f"{err.quantity} of policy '{p}'",
                                     sum(member.step for member in self.members.values())) from None
                m._pending.clear()  # a member's episodes reach the records through this trainer's env
            # every member has taken in the step before any updates: a divergence in one member's update
            # (which the guard may restore from) leaves no member without it and the run on the step's obs
            self.step = sum(m.step for m in self.members.values())
            self.record_episodes()
            self.obs = step.obs
            if hooked and self.stop_at_env_step(obs, actions, _by_policy(step)):
                return stats
            diverged = None
            for p in due:  # every due member updates, so none is left with a full, unused rollout
                try:
                    member = self.members[p]  # its rate as its optimizer has it (decayed, reduced), as a single run's
                    stats.update({f"{p}/{k}": v for k, v in member.with_lr(member.update()).items()})
                    waiting.discard(p)
                except Divergence as err:
                    diverged = diverged or Divergence(f"{err.quantity} of policy '{p}'", self.step)
            if diverged is not None:
                raise diverged
        for p, m in self.members.items():
            if m.recent_returns:
                stats[f"{p}/rolling_return"] = float(m.rolling_return())
        return stats

    def drop_partial(self) -> None:
        """Every member drops the part of its cycle under way (a stop at an env step)."""
        for m in self.members.values():
            m.drop_partial()

    def data_state(self) -> dict[str, Any]:
        """Each member's counters, reward buffer, position in its cycle and data."""
        return {"members": {p: {**m.progress_state(), "collected": m.collected, **m.data_state()}
                            for p, m in self.members.items()}}

    def load_data_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`data_state`. Where the env could not be restored (fresh episodes), a member's
        rollout in progress is dropped: its rows' successors were in the episodes that were left."""
        for p, m in self.members.items():
            saved = state["members"][p]
            m.load_progress(saved)
            m.collected = int(saved["collected"])
            m.resume_exact = self.resume_exact  # fresh episodes (False) restart a member's per-env state too
            m.load_data_state(saved)
            if not self.resume_exact and isinstance(getattr(m, "buffer", None), RolloutBuffer):
                m.buffer.pos = m.collected = 0


def _by_policy(step: Any) -> Step:
    """A multi-policy env's vector step as one :class:`Step` whose fields are dicts policy -> rows (what an
    ``on_env_step`` hook is given)."""
    return Step(*({p: getattr(s, field) for p, s in step.steps.items()} for field in Step._fields))
