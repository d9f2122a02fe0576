"""The member of a multi-policy run for a policy that does not learn: a random policy (``algo: random``) or a
frozen one (``frozen: true``). It acts (a frozen policy samples, as a turn-based game's frozen opponent does) and
counts its agents' steps and episodes, and stores no transitions and takes no gradient steps."""
from __future__ import annotations

from typing import Any

import numpy as np

from canter.trainers.stepwise import StepwiseTrainer


class FixedTrainer(StepwiseTrainer):
    """Acts with its policy and keeps only counters and episode statistics (module docstring)."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The policy's sampled actions (its exploring ones), which update no statistics."""
        return self.agent.explore(obs)

    def observe(self, step: Any) -> bool:
        """Count the step and its finished episodes; an update (of nothing) is due at once."""
        self.step += self.env.num_envs
        self.record_episodes()
        self.obs = step.obs
        return True

    def update(self) -> dict[str, float]:
        """Nothing to learn."""
        return {}

    def data_state(self) -> dict[str, Any]:
        """A random policy's generators (a frozen policy's sampling generator is its algorithm's, saved with it)."""
        rng = getattr(self.agent, "rng_state", None)
        return {"rng": rng()} if rng is not None else {}

    def load_data_state(self, state: dict[str, Any]) -> None:  # noqa: D102
        if "rng" in state:
            self.agent.load_rng_state(state["rng"])


def member_classes(run: Any, agent: Any, trainers: dict[str, type]) -> dict[str, type]:
    """The member trainer class of each policy of a multi-policy ``agent``: :class:`FixedTrainer` for a policy that
    does not learn, else its algorithm family's (of ``trainers``; the base ``Trainer``, which refuses, for others)."""
    from canter.multiagent_config import fixed_policy
    from canter.trainers.base import Trainer

    return {p: FixedTrainer if fixed_policy(run, p) else trainers.get(a.algorithm.family, Trainer)
            for p, a in agent.agents.items()}
