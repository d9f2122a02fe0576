"""TD3/DDPG's Ornstein-Uhlenbeck noise and canter's NEXT_STEP autoreset: the reset-only step after an episode's end
still acts (its action is ignored), which advanced the process restarted at the episode's end, so a new episode's
first action had had two increments from zero instead of one (Stable-Baselines3's envs reset on the step that
ends the episode: one). The process now restarts again after the reset-only step."""
from __future__ import annotations

import torch

import canter


def test_a_new_episode_s_first_action_starts_the_ou_process_from_zero():
    trainer = canter.make_trainer("td3", "Pendulum-v1", action_noise="ou", noise_std=0.5, max_steps=14,
                                  learning_starts=0, train_freq=100, batch_size=4, net_arch=[8], seed=0,
                                  env_kwargs={"max_episode_steps": 5})
    alg, before = trainer.algorithm, {}
    act = alg.act

    def watched(obs, deterministic=False):
        before[trainer.step] = None if alg.ou_state is None else alg.ou_state.clone()
        return act(obs, deterministic)

    alg.act = watched
    for _ in trainer():
        pass
    trainer.close()
    # steps 0-4: episode 1; 5: the reset-only step; 6-10: episode 2; 11: reset-only; 12-: episode 3
    for first in (6, 12):
        assert torch.equal(before[first], torch.zeros(1, 1)), (first, before)
    assert not torch.equal(before[7], torch.zeros(1, 1))  # within an episode the process carries on
