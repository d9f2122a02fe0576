"""Exact resume of recurrent PPO beyond tests/test_recurrent.py's cue task: observation and reward normalisation
with episodes terminated and truncated inside rollouts (4 and 2 of them in the whole run), one env, and Box
actions. The resumed run's weights must equal an uninterrupted run's bit for bit (the training memory, the pending
episode starts, the normalisation statistics and the running returns all restored). Test-only: each case
resumed exactly when written (2026-11-28); a resume that dropped the training memory fails all three."""
import json

import pytest
import torch

import canter

# three short runs each (the whole run, its first half, the resume): 1.5 to 4 s a case
pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:.*(less than one rollout|larger than one rollout).*")]

#: each cut (after 2 of 4 rollouts of 16 steps) falls inside an episode, where the memory carried matters: Pendulum's
#: 13-step episodes take 14 rows with the reset-only one, so the cut at row 32 is 4 steps into the third
CASES = {
    "normalised, truncations": ("CartPoleNoVel-v1", dict(n_envs=2, normalize_obs=True, normalize_reward=True,
                                                         env_kwargs={"max_episode_steps": 20})),
    "one env": ("CartPoleNoVel-v1", dict(n_envs=1)),
    "box actions": ("Pendulum-v1", dict(n_envs=2, normalize_obs=True, env_kwargs={"max_episode_steps": 13})),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_resumed_recurrent_run_is_the_uninterrupted_one(tmp_path, case):
    env, extra = CASES[case]
    common = dict(seed=5, eval_every=0, checkpoint_every=10_000, n_steps=16, batch_size=32, n_epochs=2,
                  lstm_hidden=4, tensorboard=False, lr_schedule="constant", clip_schedule="constant", **extra)
    steps = 16 * common["n_envs"]
    whole = canter.train("recurrent_ppo", env=env, max_steps=4 * steps, run_dir=tmp_path / "whole", quiet=True,
                         **common)
    canter.train("recurrent_ppo", env=env, max_steps=2 * steps, run_dir=tmp_path / "part", quiet=True, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=4 * steps)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True
    for a, b in zip(whole.algorithm.model.parameters(), resumed.algorithm.model.parameters(), strict=True):
        assert torch.equal(a, b)
    if whole.obs_rms is not None:
        assert (whole.obs_rms.mean == resumed.obs_rms.mean).all() and whole.obs_rms.count == resumed.obs_rms.count
