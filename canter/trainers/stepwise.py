"""The trainer whose iteration is vector steps until its next update: the base of the on- and off-policy
trainers, whose ``act`` / ``observe`` / ``update`` a multi-policy run steps in lockstep."""
from __future__ import annotations

from typing import Any

import numpy as np

from canter.trainers.base import Trainer


class StepwiseTrainer(Trainer):
    """A trainer whose iteration is vector steps until its next update (on- and off-policy).

    :meth:`act`, :meth:`observe` and :meth:`update` split the iteration, so a multi-policy run
    (:mod:`canter.trainers.multi_policy`) can step one env for several such trainers in lockstep.
    """

    def __init__(self, *args: Any, cycle_budget: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the most of its own steps one whole cycle (a rollout, a training phase) may take without the run passing
        #: ``max_steps``, which the budget warnings compare it with: ``run.max_steps``; a multi-policy member's
        #: share of the run's ``max_steps`` rounded down (each of its vector steps is every agent row's step too)
        self.cycle_budget = self.run.max_steps if cycle_budget is None else cycle_budget

    def setup(self) -> None:  # noqa: D102
        #: vector steps collected since the last update
        self.collected = 0

    def act(self, obs: Any) -> np.ndarray:
        """The env actions for ``obs``; what :meth:`observe` needs of them is kept."""
        raise NotImplementedError

    def observe(self, step: Any) -> bool:
        """Take in the vector step that followed :meth:`act`; True when an update is due."""
        raise NotImplementedError

    def update(self) -> dict[str, float]:
        """Learn from what was collected; update statistics."""
        raise NotImplementedError

    def due(self, vec_steps: int) -> bool:
        """Count one collected vector step; True (and restart the count) at ``vec_steps``."""
        self.collected += 1
        if self.collected < vec_steps:
            return False
        self.collected = 0
        return True

    def drop_partial(self) -> None:  # noqa: D102
        self.collected = 0

    def iteration(self) -> dict[str, float]:
        """Vector steps until an update is due, then the update (none where an ``on_env_step`` hook stopped)."""
        env = self.env
        if self.hooks.env_step_hooks():  # a separate loop: without such hooks this one is as fast as before
            return self._hooked_iteration()
        while not self.observe(env.step(self.act(self.obs))):
            pass
        return self.update()

    def _hooked_iteration(self) -> dict[str, float]:
        """:meth:`iteration` calling the ``on_env_step`` hooks after each vector step."""
        env = self.env
        while True:
            obs = self.obs
            actions = self.act(obs)
            step = env.step(actions)
            due = self.observe(step)
            if self.stop_at_env_step(obs, actions, step):
                return {}
            if due:
                return self.update()
