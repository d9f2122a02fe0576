"""Off-policy options: every option trains with finite losses, gSDE and Ornstein-Uhlenbeck noise, and a
checkpoint round trip."""
import numpy as np
import pytest
import torch

import canter
from canter.checkpoint import flatten_state
from support import TINY


@pytest.mark.parametrize("algo, env, opts", [
    ("sac", "Pendulum-v1", dict(use_sde=True, train_freq=8, gradient_steps=2)),
    ("sac", "Pendulum-v1", dict(ent_coef="0.1", n_step=3, prioritized=True)),
    ("sac", "Pendulum-v1", dict(ent_coef="auto_0.1", normalize_obs=True, n_envs=2)),
    ("td3", "Pendulum-v1", dict(action_noise="ou", n_envs=2)),
    ("ddpg", "MountainCarContinuous-v0", dict(action_noise="none")),
    ("sac_discrete", "CartPole-v1", dict(prioritized=True)),
    ("dqn", "CartPole-v1", dict(n_quantiles=8, dueling=True, double_q=True)),
    ("rainbow", "Acrobot-v1", dict(n_quantiles=8)),
    ("qrdqn", "CartPole-v1", dict(n_quantiles=4, n_envs=2)),
])
def test_options_train_with_finite_losses(algo, env, opts):
    kw = {**TINY, **opts}
    trainer = canter.make_trainer(algo, env, max_steps=160, train_freq=kw.pop("train_freq", 4), **kw)
    records = list(trainer())
    losses = [v for r in records for v in r.losses.values()]
    assert losses and np.isfinite(losses).all()
    assert records[-1].step >= 160
    trainer.close()


def test_gsde_noise_is_held_between_resamples():
    trainer = canter.make_trainer("sac", "Pendulum-v1", use_sde=True, sde_sample_freq=3, **TINY)
    a = trainer.algorithm
    obs = torch.randn(1, 3)
    acts = [a.act(obs).actions for _ in range(6)]
    assert torch.equal(acts[0], acts[1]) and torch.equal(acts[1], acts[2])  # same obs, same noise matrix
    assert not torch.equal(acts[2], acts[3]) and torch.equal(acts[3], acts[5])
    trainer.close()


@pytest.mark.parametrize("freq", [-1, 12])
def test_gsde_noise_is_resampled_at_the_start_of_every_collection_phase(freq):
    """New matrices when a collection phase starts (SB3's collect_rollouts), also when learning_starts
    is not a multiple of train_freq (with -1 they were drawn every train_freq acting calls counted from
    learning_starts: at steps 100, 132, ... while the phases start at 128, 160, ...); with
    sde_sample_freq N > 0 also every N steps counted from the phase's start (SB3's
    ``num_collected_steps % sde_sample_freq``, which counts the phase's warm-up steps too: 96, 108, 120 where
    warm-up ends at 100; they were counted over the whole run, then from the first policy step: 100, 112, 124)."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", use_sde=True, max_steps=260, sde_sample_freq=freq,
                                  **{**TINY, "learning_starts": 100, "train_freq": 32})
    a = trainer.algorithm
    draw, drawn_at = a._exploration_weights, []

    def watched(n):
        before = a.sde_weights
        weights = draw(n)
        if weights is not before:
            drawn_at.append(trainer.step)
        return weights

    a._exploration_weights = watched
    phase_ends = [r.step for r in trainer()]
    trainer.close()
    assert phase_ends[:3] == [32, 64, 96]  # one record per phase: the phases start at multiples of 32
    every = 32 if freq < 0 else freq  # vector steps counted from the phase's start (96), its warm-up's included
    end = phase_ends[-1]  # the budget rounded up to a whole phase
    first = [100, *range(96 + every, 128, every)]  # the first policy action (100) draws; then 108, 120 (SB3's)
    expected = [*first, *(t for s in range(128, end, 32) for t in range(s, s + 32, every))]
    assert drawn_at == expected, (drawn_at, phase_ends)


def test_ou_noise_is_correlated_and_reset_at_episode_end():
    trainer = canter.make_trainer("td3", "Pendulum-v1", action_noise="ou", noise_std=0.5, n_envs=2, **TINY)
    a = trainer.algorithm
    obs = torch.zeros(2, 3)
    for _ in range(20):
        a.act(obs)
    state = a.ou_state.clone()
    assert (state != 0).all()
    a.reset_noise(torch.tensor([True, False]))
    assert (a.ou_state[0] == 0).all() and torch.equal(a.ou_state[1], state[1])
    trainer.close()


def test_ou_noise_restarts_when_a_resume_starts_fresh_episodes(tmp_path):
    """A resume that cannot restore the env resets it (fresh episodes); the Ornstein-Uhlenbeck noise of
    the dropped episodes must not carry into the new ones (it restarts at an episode end)."""
    from support import state_after_inexact_resume

    exact, ou_state = state_after_inexact_resume(
        "td3", "Pendulum-v1", "LockedPendulumOU-test", lambda t: t.algorithm.ou_state.clone(), tmp_path / "run",
        n_envs=2, max_steps=500, eval_every=0, eval_episodes=1, tensorboard=False, seed=0, learning_starts=50,
        action_noise="ou", net_arch=[16], batch_size=16)
    assert exact is False and torch.equal(ou_state, torch.zeros_like(ou_state))


@pytest.mark.parametrize("algo", ["sac", "td3", "sac_discrete", "rainbow"])
def test_checkpoint_round_trip_gives_identical_actions(algo, tmp_path):
    env = "CartPole-v1" if algo in ("sac_discrete", "rainbow") else "Pendulum-v1"
    extra = dict(n_quantiles=8) if algo == "rainbow" else {}
    agent = canter.train(algo, env, max_steps=96, run_dir=tmp_path / "run", train_freq=4, **TINY, **extra)
    loaded = canter.load(tmp_path / "run", weights_only=False)
    obs = np.random.default_rng(0).normal(size=(5,) + agent.observation_space.shape).astype(np.float32)
    np.testing.assert_array_equal(agent.predict(obs), loaded.predict(obs))
    saved, restored = agent.algorithm.state_dict(), loaded.algorithm.state_dict()
    assert saved["optimizers"].keys() == restored["optimizers"].keys()
    skeleton, tensors = flatten_state(saved["optimizers"])
    skeleton_back, tensors_back = flatten_state(restored["optimizers"])
    assert skeleton == skeleton_back and tensors.keys() == tensors_back.keys()
    assert any("exp_avg" in k for k in tensors)  # the Adam moments are part of the checkpoint
    for key, value in tensors.items():
        torch.testing.assert_close(value, tensors_back[key])
    for key, value in saved["extra"].items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(value, restored["extra"][key])
