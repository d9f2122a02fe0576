"""The on-policy trainer of recurrent policies (:mod:`canter.algorithms.recurrent_ppo`)."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from canter.envs.vector import Step
from canter.trainers.on_policy import OnPolicyTrainer


class RecurrentOnPolicyTrainer(OnPolicyTrainer):
    """:class:`OnPolicyTrainer` whose rollout stays time-major with each env's memory at its start
    and the steps where an episode began (:class:`~canter.data.batch.SequenceBatch`).

    With ``NEXT_STEP`` autoreset the observation a reset step returns (``valid`` False) is a new
    episode's first: the agent's memory of that env is zeroed before it acts on it.
    """

    def setup(self) -> None:  # noqa: D102
        super().setup()
        n = self.env.num_envs
        self.starts = np.ones(n, dtype=bool)  # the first observations begin episodes
        self.start_flags = np.zeros((self.config.n_steps, n), dtype=bool)
        self.rollout_memory: Any = None

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Zero the memory of envs starting an episode, keep the rollout's first memory, then act."""
        self.agent.begin_episodes(self.starts, training=True)
        t = self.buffer.pos
        if t == 0:
            self.rollout_memory = self.agent.training_memory(self.env.num_envs)
        self.start_flags[t] = self.starts
        return super().act(obs)

    def observe(self, step: Step) -> bool:  # noqa: D102
        due = super().observe(step)
        self.starts = ~np.asarray(step.valid, dtype=bool)
        return due

    def update(self) -> dict[str, float]:
        """GAE over the rollout, then ``learn`` on its sequences."""
        agent = self.agent
        agent.begin_episodes(self.starts, training=True)
        batch = self.buffer.finish_sequences(agent.bootstrap_value(self.obs, getattr(self.env, "observed", None)),
                                             self.config.gamma, self.config.gae_lambda,
                                             self.start_flags, self.rollout_memory)
        self.set_progress()
        if not bool(batch.valid.any()):
            return {}
        with self.updating():
            return agent.learn(batch)

    def data_state(self) -> dict[str, Any]:
        """The training memory and the pending episode starts (a resumed run acts from them)."""
        h, c = self.agent.training_memory(self.env.num_envs)
        return {"recurrent": {"h": h.cpu().numpy(), "c": c.cpu().numpy(), "starts": self.starts.copy()}}

    def load_data_state(self, state: dict[str, Any]) -> None:
        """Restore the training memory and pending starts; after a resume that could not restore the env
        (it reset it: fresh episodes, :attr:`resume_exact` False) every env starts an episode instead,
        so no new episode is acted on with the memory of one that was dropped."""
        saved = state["recurrent"]
        self.agent.set_training_memory((torch.as_tensor(np.asarray(saved["h"])),
                                        torch.as_tensor(np.asarray(saved["c"]))))
        self.starts = np.asarray(saved["starts"], dtype=bool).copy()
        if self.resume_exact is False:
            self.starts[:] = True
