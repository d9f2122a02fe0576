"""Unit tests of A2C, REINFORCE and ACER: their update rules, Retrace targets, ACER's trust region,
segment replay and trainer."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.algorithms.acer import ACER, retrace_targets, trust_region_projection
from canter.config import build
from canter.data.rollout import compute_gae
from canter.data.segments import SegmentBatch, SegmentReplay
from canter.errors import CanterError


# -- A2C / REINFORCE -------------------------------------------------------------------------------
def test_a2c_takes_one_gradient_step_per_rollout_and_reinforce_uses_monte_carlo_returns():
    trainer = canter.make_trainer("a2c", "CartPole-v1", n_envs=2, n_steps=5, max_steps=40, eval_every=0,
                                  eval_episodes=1)
    list(trainer())
    assert trainer.algorithm.updates == 4
    with pytest.raises(CanterError, match="gae_lambda"):
        canter.make_trainer("reinforce", "CartPole-v1", gae_lambda=0.9)
    # lambda = 1: A_t + V_t is the discounted return, bootstrapped only where the rollout cuts it
    rewards = np.ones((4, 1), np.float32)
    values = np.array([[0.3], [0.2], [0.1], [0.5]], np.float32)
    term = np.array([[0], [1], [0], [0]], np.float32)
    adv = compute_gae(rewards, values, np.array([2.0], np.float32), term, term, 0.5, 1.0)
    returns = adv + values
    np.testing.assert_allclose(returns[:, 0], [1.5, 1.0, 2.0, 2.0])



def test_reinforces_fixed_gae_lambda_is_refused_saying_why():
    """It was "'hparams.gae_lambda' must be >= 1, got 0.9", as if larger values were taken."""
    with pytest.raises(CanterError) as err:
        canter.make_trainer("reinforce", "CartPole-v1", gae_lambda=0.9)
    assert str(err.value) == ("'hparams.gae_lambda' must be 1, got 0.9: fixed at 1 for REINFORCE (Monte-Carlo returns); "
                              "a2c and ppo take other values")
    with pytest.raises(CanterError, match="must be 1, got 1.5: fixed at 1 for REINFORCE"):
        canter.make_trainer("reinforce", "CartPole-v1", gae_lambda=1.5)

def test_a2c_rmsprop_and_adam_options():
    for opt in ("rmsprop", "adam"):
        trainer = canter.make_trainer("a2c", "CartPole-v1", optimizer=opt, n_envs=2, max_steps=100, eval_every=0,
                                      eval_episodes=1, normalize_advantage=True, gae_lambda=0.9)
        records = list(trainer())
        name = type(trainer.algorithm.optimizer).__name__
        assert name == ("FlatRMSprop" if opt == "rmsprop" else "FlatAdam")
        assert np.isfinite(records[-1].losses["value_loss"])


# -- ACER ------------------------------------------------------------------------------------------
def _retrace_case(terminated, dones):
    t = lambda x: torch.tensor(x, dtype=torch.float32).view(-1, 1)  # noqa: E731
    return retrace_targets(t([1.0, 2.0, 3.0]), t([0.5, 1.0, 1.5]), t([0.4, 0.8, 1.2, 2.0]), t([1.0, 0.5, 0.25]),
                           t(terminated), t(dones), 0.9).view(-1)


def test_retrace_targets_match_hand_computed_values():
    # no episode end: Q_ret_2 = 3 + .9 * 2 = 4.8; Q_ret_1 = 2 + .9 * (1.2 + .25 * (4.8 - 1.5)) = 3.8225;
    # Q_ret_0 = 1 + .9 * (.8 + .5 * (3.8225 - 1)) = 2.990125
    torch.testing.assert_close(_retrace_case([0, 0, 0], [0, 0, 0]), torch.tensor([2.990125, 3.8225, 4.8]))
    # terminated at step 1: no bootstrap there; Q_ret_0 = 1 + .9 * (.8 + .5 * (2 - 1)) = 2.17
    torch.testing.assert_close(_retrace_case([0, 1, 0], [0, 1, 0]), torch.tensor([2.17, 2.0, 4.8]))
    # truncated at step 1: bootstrap from V of the next row (the final observation), no correction through it
    # Q_ret_1 = 2 + .9 * 1.2 = 3.08; Q_ret_0 = 1 + .9 * (.8 + .5 * (3.08 - 1)) = 2.656
    truncated = _retrace_case([0, 0, 0], [0, 1, 0])
    torch.testing.assert_close(truncated, torch.tensor([2.656, 3.08, 4.8]))
    assert not torch.allclose(truncated, _retrace_case([0, 1, 0], [0, 1, 0]))  # truncation is not termination


def test_retrace_with_untruncated_weights_and_q_equal_v_is_the_monte_carlo_return():
    rng = np.random.default_rng(0)
    T, N = 7, 3
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T + 1, N)).astype(np.float32)
    term = (rng.random((T, N)) < 0.2).astype(np.float32)
    dones = np.maximum(term, (rng.random((T, N)) < 0.2).astype(np.float32))
    adv = compute_gae(rewards, values[:T], values[T], term, dones, 0.95, 1.0)
    q_ret = retrace_targets(*(torch.from_numpy(x) for x in (rewards, values[:T], values, np.ones((T, N), np.float32),
                                                          term, dones)), 0.95)
    torch.testing.assert_close(q_ret, torch.from_numpy(adv + values[:T]), rtol=1e-5, atol=1e-5)



def _retrace_by_sum(rewards, q_taken, values, rho_bar, terminated, dones, gamma):
    """Munos et al.'s Retrace in its sum form, each row's sum stopping at its episode's end:
    ``Q_ret_t = Q_t + sum_{s>=t} gamma^(s-t) (rho_bar_{t+1} ... rho_bar_s) delta_s`` with
    ``delta_s = r_s + gamma (1 - terminated_s) V_{s+1} - Q_s``."""
    T, N = rewards.shape
    out = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, weight = q_taken[t, n], 1.0
            for s in range(t, T):
                weight *= gamma * rho_bar[s, n] if s > t else 1.0
                total += weight * (rewards[s, n] + gamma * (1 - terminated[s, n]) * values[s + 1, n] - q_taken[s, n])
                if dones[s, n]:
                    break
            out[t, n] = total
    return out


def test_retrace_targets_equal_the_sum_form_with_truncated_weights_and_episode_ends():
    rng = np.random.default_rng(4)
    T, N, gamma = 8, 4, 0.9
    rewards, q_taken, values = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=(T + 1, N))
    rho_bar = np.minimum(1.0, np.exp(rng.normal(scale=0.7, size=(T, N))))
    dones = (rng.random((T, N)) < 0.25).astype(float)
    terminated = dones * (rng.random((T, N)) < 0.5)
    assert terminated.sum() > 1 and (dones - terminated).sum() > 1 and (rho_bar < 1).any()
    got = retrace_targets(*(torch.from_numpy(x) for x in (rewards, q_taken, values, rho_bar, terminated, dones)), gamma)
    np.testing.assert_allclose(got.numpy(), _retrace_by_sum(rewards, q_taken, values, rho_bar, terminated, dones, gamma),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("trust_region", [False, True])
def test_acer_gradient_is_the_papers_with_bias_correction_and_trust_region(trust_region):
    """One ACER update against Wang et al. 2017 written from the paper: Retrace targets (sum form),
    ``min(c, rho) (Q_ret - V) grad log pi(a)`` plus the bias correction ``sum_a [1 - c / rho(a)]_+
    pi(a) (Q(a) - V) grad log pi(a)`` and the entropy bonus, as a gradient g w.r.t. each row's
    probabilities, projected to ``k . z <= delta`` (``k = -pi_avg / pi``) when the trust region is
    on, then back-propagated; plus the Q regression. Episode ends: a termination and a truncation."""
    T, N, n_act, c, gamma, ent, q_coef, delta = 5, 3, 4, 1.3, 0.9, 0.05, 0.7, 0.02
    cfg = build(ACER.Config, dict(net_arch=[16], trust_region=trust_region, max_grad_norm=1e9, correction_c=c,
                                  ent_coef=ent, q_coef=q_coef, gamma=gamma, delta=delta, optimizer="adam"))
    algo = ACER(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(n_act), cfg, seed=0)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in algo.avg_model.parameters():  # an average policy away from the current one
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    obs = torch.randn(T + 1, N, 3, generator=g)
    actions = torch.randint(0, n_act, (T, N), generator=g)
    mu = torch.softmax(2 * torch.randn(T, N, n_act, generator=g), -1)  # ratios far above and below c
    rewards = torch.randn(T, N, generator=g)
    dones, terminated, valid = torch.zeros(T, N), torch.zeros(T, N), torch.ones(T, N, dtype=torch.bool)
    dones[1, 0] = terminated[1, 0] = 1.0
    valid[2, 0] = False
    dones[2, 1] = 1.0  # truncated
    valid[3, 1] = False
    batch = SegmentBatch(obs, actions, mu, rewards, terminated, dones, valid)

    params = list(algo.model.parameters())
    logits, q = algo.model.action_q(obs.reshape(-1, 3))
    pi = torch.softmax(logits, -1)
    v = (pi * q).sum(-1).detach().view(T + 1, N)
    pi_t, q_t = pi.view(T + 1, N, n_act)[:T], q.view(T + 1, N, n_act)[:T]
    take = lambda x: x.gather(2, actions[..., None]).squeeze(-1)  # noqa: E731
    rho_all = pi_t.detach() / mu
    q_ret = torch.from_numpy(_retrace_by_sum(rewards.numpy(), take(q_t).detach().numpy(), v.numpy(),
                                             take(rho_all).clamp(max=1.0).numpy(), terminated.numpy(), dones.numpy(),
                                             gamma)).float()
    prob = pi_t.detach().clone().requires_grad_(True)  # the policy's statistics phi
    objective = (torch.log(take(prob)) * take(rho_all).clamp(max=c) * (q_ret - v[:T])
                 + (torch.log(prob) * (torch.relu(1 - c / rho_all) * pi_t.detach() * (q_t.detach() - v[:T, :, None]))).sum(-1)
                 - ent * (prob * torch.log(prob)).sum(-1))
    (grad_phi,) = torch.autograd.grad((objective * valid).sum(), prob)
    if trust_region:
        with torch.no_grad():
            k = -torch.softmax(algo.avg_model.action(obs[:T].reshape(-1, 3)), -1).view(T, N, n_act) / pi_t.detach()
            scale = (((k * grad_phi).sum(-1) - delta) / (k * k).sum(-1)).clamp(min=0)
        assert ((scale > 0) & valid).any() and ((scale == 0) & valid).any()  # the region binds on some rows only
        grad_phi = grad_phi - scale[..., None] * k
    count = valid.sum()
    q_loss = 0.5 * ((q_ret - take(q_t)).pow(2) * valid).sum() / count
    expected = torch.autograd.grad(-(pi_t * grad_phi).sum() / count + q_coef * q_loss, params)
    avg_before = [p.detach().clone() for p in algo.avg_model.parameters()]
    stats = algo.learn(batch)
    for p, want in zip(params, expected):
        torch.testing.assert_close(p.grad, want, rtol=1e-4, atol=1e-6)
    assert (stats["trust_region_active"] > 0) == trust_region
    for before, avg, p in zip(avg_before, algo.avg_model.parameters(), params):  # after the step, alpha = 0.99
        torch.testing.assert_close(avg, 0.99 * before + 0.01 * p.detach())

def test_trust_region_projection_bounds_the_linearised_kl_step():
    g = torch.tensor([[1.0, 2.0], [0.1, 0.0], [-3.0, 1.0]])
    k = torch.tensor([[1.0, 1.0], [1.0, 0.0], [-2.0, 0.0]])
    z, adj = trust_region_projection(g, k, delta=0.5)
    dots = (k * z).sum(-1)
    assert torch.all(dots <= 0.5 + 1e-5)
    torch.testing.assert_close(z[1], g[1])  # already inside: unchanged
    assert adj[1] == 0 and adj[0] > 0 and adj[2] > 0
    torch.testing.assert_close(dots[[0, 2]], torch.tensor([0.5, 0.5]))  # outside: projected onto the boundary
    torch.testing.assert_close(z[0], g[0] - adj[0] * k[0])


def test_segment_replay_keeps_time_structure_and_samples_per_env_columns():
    rep = SegmentReplay(capacity=3, n_steps=2, n_envs=2, obs_shape=(1,), n_actions=2)
    for seg in range(4):  # the fourth overwrites the first
        for t in range(2):
            obs = torch.tensor([[100.0 * seg + 10 * t + 0], [100.0 * seg + 10 * t + 1]])
            rep.add(t, obs, torch.tensor([t, 1 - t]), torch.full((2, 2), 0.5), np.full(2, seg, np.float32),
                    np.zeros(2), np.array([False, t == 1]), np.ones(2, bool))
        batch = rep.finish(torch.tensor([[100.0 * seg + 20], [100.0 * seg + 21]]))
    assert rep.size == 3 and rep.transitions == 12 and batch.rewards[0, 0] == 3
    sample = rep.sample(np.random.default_rng(0))
    assert sample.obs.shape == (3, 2, 1) and sample.actions.shape == (2, 2) and sample.behaviour_probs.shape == (2, 2, 2)
    for env in range(2):
        seg = int(sample.rewards[0, env])
        assert seg in (1, 2, 3)  # segment 0 was overwritten
        assert sample.obs[:, env, 0].tolist() == [100.0 * seg + env, 100.0 * seg + 10 + env, 100.0 * seg + 20 + env]
    assert sample.dones[:, 1].tolist() == [0.0, 1.0]


def test_acer_learns_with_replay_and_refuses_box_actions():
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=10, replay_start=40, max_steps=400,
                                  eval_every=0, eval_episodes=1)
    records = list(trainer())
    assert sum(r.losses["replay_updates"] for r in records) > 0
    assert all(np.isfinite(r.losses["critic_loss"]) for r in records)
    avg = dict(trainer.algorithm.avg_model.named_parameters())
    moved = [not torch.equal(avg[k], p) for k, p in trainer.algorithm.model.named_parameters()]
    assert any(moved)  # the average network lags behind the current one
    trainer.close()
    with pytest.raises(CanterError, match="ACER needs a Discrete action space"):
        canter.make_trainer("acer", "Pendulum-v1")


def test_acer_warns_when_its_replay_can_never_reach_replay_start():
    """buffer_size 1000 rounds down to 6 segments of 20 x 8 = 960 transitions, fewer than replay_start 1000:
    the run silently never replayed (0 replay updates in 20k steps)."""
    from canter.errors import CanterWarning

    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=8, n_steps=20, buffer_size=1000, replay_start=1000,
                                  max_steps=160, eval_every=0, eval_episodes=1)
    with pytest.warns(CanterWarning, match="ACER never replays: .* 960 transitions, fewer than hparams.replay_start"):
        list(trainer())
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=8, n_steps=20, buffer_size=1000, replay_start=960,
                                  max_steps=160, eval_every=0, eval_episodes=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CanterWarning)
        list(trainer())


@pytest.mark.parametrize("optimizer", ["rmsprop", "adam"])
def test_acer_takes_no_step_on_a_segment_of_reset_rows_only(optimizer):
    """n_steps 1 with one env: the row after each episode's end is a segment with no real transition;
    ACER stepped its optimizer on it (Adam moved the weights by momentum) and moved the average network."""
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=1, n_steps=1, replay_start=10, max_steps=300,
                                  eval_every=0, eval_episodes=1, optimizer=optimizer)
    algorithm, learn, moved = trainer.algorithm, trainer.algorithm.learn, []

    def spy(batch):
        if batch.valid.any():
            return learn(batch)
        before = [p.detach().clone() for p in algorithm.modules()["model"].parameters()]
        before += [p.detach().clone() for p in algorithm.avg_model.parameters()]
        updates = algorithm.updates
        out = learn(batch)
        after = list(algorithm.modules()["model"].parameters()) + list(algorithm.avg_model.parameters())
        moved.append(algorithm.updates != updates or any(not torch.equal(p, b) for p, b in zip(after, before)))
        return out

    algorithm.learn = spy
    records = list(trainer())
    trainer.close()
    assert moved and not any(moved)
    assert all(np.isfinite(r.losses["critic_loss"]) for r in records if "critic_loss" in r.losses)


def test_acer_refuses_a_model_without_q_values_in_one_line(capsys, tmp_path):
    """mlp_actor_critic takes ACER's model arguments but has no action_q: refused before training
    (it acted, then failed with an AttributeError traceback at the first update). It is canter's model
    for other algorithms, named as such (a user's model is checked by ACER's model_methods)."""
    from support import assert_train_refused

    assert_train_refused(capsys, tmp_path, ["train", "acer", "--env", "CartPole-v1", "--set", "model=mlp_actor_critic",
                                            "--max-steps", "400"],
                        "model 'mlp_actor_critic' cannot be trained by acer (it is made for a2c")


def test_acer_trainer_applies_the_run_lr_control_and_checks_env_data():
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=10, replay_ratio=0, max_steps=400,
                                  eval_every=0, eval_episodes=1, lr_decay="linear", lr_schedule="constant", lr=1e-3)
    list(trainer())
    assert trainer.algorithm.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-9)
    from canter.registry import register
    from canter.trainers.guard import TrainingDiverged

    class NaNObs(gym.Wrapper):  # a faulty simulator: NaN observations after 300 steps
        def __init__(self, **kw):
            super().__init__(gym.make("CartPole-v1", **kw))
            self.count = 0

        def step(self, action):
            obs, reward, term, trunc, info = self.env.step(action)
            self.count += 1
            return (np.full_like(obs, np.nan) if self.count > 300 else obs), reward, term, trunc, info

    register("env", "NaNObsCartPole-acer-test")(NaNObs)
    trainer = canter.make_trainer("acer", "NaNObsCartPole-acer-test", n_envs=2, n_steps=10, max_steps=800,
                                  eval_every=0, eval_episodes=1)
    with pytest.raises(TrainingDiverged, match="non-finite observation"):
        list(trainer())
