"""A resume that starts fresh episodes (``resume_exact`` False) with a user's replay buffer that has no
``new_episodes()`` (fbe32b8 lets it resume): the Ornstein-Uhlenbeck noise of TD3 / DDPG still restarts, as at an
episode end (d7d4d13); fbe32b8 made that restart depend on the buffer having ``new_episodes``."""
from __future__ import annotations

import torch

import canter


class _UserBuffer:
    """A user's buffer (a trainer's ``make_buffer``): the state methods a resume calls, no ``new_episodes``."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state) -> None:
        self.inner.load_state_dict(state)


def test_the_ou_noise_restarts_on_a_fresh_episodes_resume_with_a_buffer_without_new_episodes():
    trainer = canter.make_trainer("td3", "Pendulum-v1", action_noise="ou", n_envs=2, max_steps=100, learning_starts=10,
                                  eval_episodes=0, tensorboard=False, net_arch=[16], batch_size=16)
    try:
        trainer.setup()
        trainer.buffer = _UserBuffer(trainer.buffer)
        state = trainer.data_state()
        trainer.algorithm.ou_state = torch.full((2, 1), 0.5)  # the dropped episodes' noise
        trainer.resume_exact = False
        trainer.load_data_state(state)  # no AttributeError for the missing new_episodes
        assert torch.equal(trainer.algorithm.ou_state, torch.zeros(2, 1))
    finally:
        trainer.close()
