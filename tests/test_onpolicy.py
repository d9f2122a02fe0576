"""Unit tests of the on-policy family's estimators and update rules (A2C, REINFORCE, TRPO, NPG, ACER)."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.algorithms.acer import retrace_targets, trust_region_projection
from canter.algorithms.actor_critic import flat
from canter.algorithms.trpo import NPG, TRPO, conjugate_gradient, fisher_vector_product, line_search
from canter.config import build
from canter.data.rollout import compute_gae
from canter.data.segments import SegmentReplay
from canter.errors import CanterError


# -- conjugate gradient and the Fisher-vector product ---------------------------------------------
def test_conjugate_gradient_solves_spd_system():
    g = torch.Generator().manual_seed(0)
    m = torch.randn(6, 6, generator=g, dtype=torch.float64)
    a = m @ m.T + 0.5 * torch.eye(6, dtype=torch.float64)
    b = torch.randn(6, generator=g, dtype=torch.float64)
    x = conjugate_gradient(lambda v: a @ v, b, max_iter=6)  # n steps: exact up to rounding
    torch.testing.assert_close(x, torch.linalg.solve(a, b), rtol=1e-8, atol=1e-8)
    few = conjugate_gradient(lambda v: a @ v, b, max_iter=2)
    assert (a @ few - b).norm() < b.norm()  # partial solves already reduce the residual
    assert torch.equal(conjugate_gradient(lambda v: a @ v, torch.zeros(6, dtype=torch.float64), 5), torch.zeros(6, dtype=torch.float64))


def _npg(action_space, **hp):
    obs_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    cfg = build(NPG.Config, dict(net_arch=[4], **hp))
    torch.manual_seed(0)
    return NPG(obs_space, action_space, cfg, seed=0)


def _jacobian_rows(out: torch.Tensor, params: list) -> torch.Tensor:
    rows = [flat(torch.autograd.grad(o, params, retain_graph=True, allow_unused=False)) for o in out]
    return torch.stack(rows)


def test_fisher_vector_product_matches_explicit_fisher_categorical():
    algo = _npg(gym.spaces.Discrete(3))
    params = algo.actor_params
    obs = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    logits = algo.model.action(obs)
    kl = algo.kl(algo.snapshot(obs), logits).mean()
    fvp = fisher_vector_product(kl, params, damping=0.0)
    # explicit Fisher: E_s E_{a~pi} [grad log pi(a|s) grad log pi(a|s)^T], enumerating the actions
    n = flat(params).numel()
    fisher = torch.zeros(n, n)
    logp = torch.log_softmax(logits, -1)
    for s in range(5):
        for a in range(3):
            score = flat(torch.autograd.grad(logp[s, a], params, retain_graph=True))
            fisher += logp[s, a].exp().detach() * torch.outer(score, score) / 5
    for seed in range(3):
        v = torch.randn(n, generator=torch.Generator().manual_seed(seed))
        torch.testing.assert_close(fvp(v), fisher @ v, rtol=1e-4, atol=1e-6)
    v = torch.randn(n)
    torch.testing.assert_close(fisher_vector_product(kl, params, 0.3)(v), fisher @ v + 0.3 * v, rtol=1e-4, atol=1e-6)


def test_fisher_vector_product_matches_explicit_fisher_gaussian():
    algo = _npg(gym.spaces.Box(-1, 1, (2,), np.float32), log_std_init=-0.5)
    log_std = algo.model.log_std
    assert any(p is log_std for p in algo.actor_params)
    params = [p for p in algo.actor_params if p is not log_std] + [log_std]
    obs = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    mean = algo.model.action(obs)
    kl = algo.kl(algo.snapshot(obs), mean).mean()
    fvp = fisher_vector_product(kl, params, damping=0.0)
    # closed form for N(mu(s), diag sigma^2): J_mu^T diag(1/sigma^2) J_mu for the mean's parameters,
    # 2 I for log_std, no cross terms
    inv_var = torch.exp(-2 * algo.model.log_std.detach())
    mean_params = params[:-1]
    n_mean = flat(mean_params).numel()
    fisher = torch.zeros(n_mean + 2, n_mean + 2)
    for s in range(4):
        jac = _jacobian_rows(mean[s], mean_params)  # [2, n_mean]
        fisher[:n_mean, :n_mean] += jac.T @ torch.diag(inv_var) @ jac / 4
    fisher[n_mean:, n_mean:] = 2 * torch.eye(2)
    v = torch.randn(n_mean + 2, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(fvp(v), fisher @ v, rtol=1e-4, atol=1e-6)


def test_trpo_and_npg_refuse_a_shared_trunk_model():
    obs_space, act_space = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2)
    from canter.registry import register

    @register("model", "test_shared_actor_critic")
    def shared(observation_space, action_space, **kw):
        from canter.models import ActorCritic

        return ActorCritic(observation_space, action_space, **{**kw, "shared_trunk": True})

    with pytest.raises(CanterError, match="separate actor and critic"):
        TRPO(obs_space, act_space, build(TRPO.Config, {}), model="test_shared_actor_critic")


# -- the TRPO step ---------------------------------------------------------------------------------
def _first_update(algo: str, env: str = "CartPole-v1", **kw):
    """Collect one rollout and run one update; return (batch, policy snapshot before, trainer)."""
    trainer = canter.make_trainer(algo, env, seed=3, n_envs=2, n_steps=256, eval_every=0, eval_episodes=1, **kw)
    trainer.setup()
    trainer.obs = trainer.env.reset(seed=3)
    algorithm = trainer.algorithm
    seen = {}
    learn = algorithm.learn

    def spy(batch):
        seen["batch"], seen["before"] = batch, algorithm.snapshot(batch.obs)
        seen["stats"] = learn(batch)
        return seen["stats"]

    algorithm.learn = spy
    trainer.iteration()
    trainer.close()
    return seen, algorithm


@pytest.mark.parametrize("env", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("target_kl", [0.002, 0.05])
def test_trpo_step_respects_the_kl_bound(env, target_kl):
    seen, algo = _first_update("trpo", env, target_kl=target_kl)
    batch = seen["batch"]
    with torch.no_grad():
        kl = algo.kl(seen["before"], algo.model.action(batch.obs)).mean().item()
    assert seen["stats"]["step_accepted"] == 1.0
    assert 0 < kl <= target_kl
    assert kl == pytest.approx(seen["stats"]["kl"], rel=1e-4)
    assert seen["stats"]["policy_improvement"] > 0


def test_npg_step_has_the_kl_size_of_its_quadratic_model():
    seen, algo = _first_update("npg", "CartPole-v1", target_kl=1e-4, cg_damping=1e-4, cg_max_steps=50)
    with torch.no_grad():
        kl = algo.kl(seen["before"], algo.model.action(seen["batch"].obs)).mean().item()
    assert kl == pytest.approx(1e-4, rel=0.2)  # small steps: the quadratic model is accurate


def test_line_search_rejects_steps_that_break_the_constraint_or_lower_the_surrogate():
    w = torch.nn.Parameter(torch.tensor([0.0, 0.0]))

    def evaluate():  # surrogate peaks at w = (1, 1); "KL" is the squared distance from the origin
        x = w.detach()
        return float(-(x - 1).pow(2).sum() + 2), float(x.pow(2).sum())

    # the full step (4, 4) breaks kl <= 1 and lowers the surrogate; 0.5^2 * (4, 4) = (1, 1) would be
    # too far for the KL too; 0.5^3 * (4, 4) = (0.5, 0.5) has kl 0.5 and a higher surrogate
    ok, frac = line_search([w], torch.tensor([4.0, 4.0]), evaluate, 0.0, max_kl=1.0, shrink=0.5, max_iter=10)
    assert ok and frac == 0.125 and torch.equal(w.detach(), torch.tensor([0.5, 0.5]))
    w.data.zero_()
    ok, frac = line_search([w], torch.tensor([-1.0, 0.0]), evaluate, 0.0, max_kl=1.0, shrink=0.5, max_iter=10)
    assert not ok and frac == 0.0 and torch.equal(w.detach(), torch.zeros(2))  # every try lowers the surrogate


def test_trpo_keeps_the_old_policy_when_the_line_search_fails(monkeypatch):
    from canter.algorithms.trpo import TRPO

    kl = TRPO.kl

    def kl_too_large_outside_autograd(self, old, out_new):  # the line search evaluates without a graph
        value = kl(self, old, out_new)
        return value if torch.is_grad_enabled() else value + 1.0

    monkeypatch.setattr(TRPO, "kl", kl_too_large_outside_autograd)
    seen, algo = _first_update("trpo", "CartPole-v1", line_search_max_iter=3)
    with torch.no_grad():
        assert torch.equal(algo.model.action(seen["batch"].obs), seen["before"][0])
    assert seen["stats"]["step_accepted"] == 0.0


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
    assert all(np.isfinite(r.losses["q_loss"]) for r in records)
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
    assert all(np.isfinite(r.losses["q_loss"]) for r in records if "q_loss" in r.losses)


def test_acer_refuses_a_model_without_q_values_in_one_line(capsys, tmp_path):
    """mlp_actor_critic takes ACER's model arguments but has no action_q: refused before training
    (it acted, then failed with an AttributeError traceback at the first update). It is canter's model
    for other algorithms, named as such (a user's model is checked by ACER's model_methods)."""
    from tests.test_cli_errors import assert_train_refused

    assert_train_refused(capsys, tmp_path, ["train", "acer", "--env", "CartPole-v1", "--set", "model=mlp_actor_critic",
                                            "--max-steps", "400"],
                        "model 'mlp_actor_critic' cannot be trained by acer (it is made for a2c")


# -- trainer edge cases ----------------------------------------------------------------------------
class _Uint8Obs(gym.Env):
    """Small non-image uint8 observations (values 100..199), truncated after 10 steps."""

    observation_space = gym.spaces.Box(0, 255, (4,), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.integers(100, 200, 4).astype(np.uint8), {}

    def step(self, action):
        self.t += 1
        return self.np_random.integers(100, 200, 4).astype(np.uint8), 1.0, False, self.t >= 10, {}


def test_normalized_uint8_observations_are_trained_on_as_acted_on():
    from canter.registry import register

    register("env", "Uint8Obs-test")(lambda render_mode=None, **kw: _Uint8Obs())
    trainer = canter.make_trainer("ppo", "Uint8Obs-test", n_envs=2, n_steps=8, normalize_obs=True, eval_every=0,
                                  eval_episodes=1, max_steps=64)
    trainer.setup()
    trainer.obs = trainer.env.reset(seed=0)
    algorithm, acted, seen = trainer.algorithm, [], {}
    act, act_numpy = algorithm.act, algorithm.act_numpy  # the torch path and the NumPy shortcut
    algorithm.act = lambda obs, deterministic=False: acted.append(obs.clone()) or act(obs, deterministic)
    algorithm.act_numpy = lambda obs, deterministic=False: (acted.append(torch.tensor(obs))
                                                            or act_numpy(obs, deterministic))
    algorithm.learn = lambda batch: seen.setdefault("batch", batch) and {}
    trainer.iteration()
    trainer.close()
    acted = torch.cat(acted)  # the normalised observations the policy saw (every row valid: no episode ended)
    assert acted.dtype == torch.float32 and acted.abs().max() <= 10
    torch.testing.assert_close(seen["batch"].obs, acted)


def test_rollouts_of_reset_rows_only_skip_the_update():
    # n_envs=1, n_steps=1: the rollout after an episode's last step holds only the autoreset row
    for algo, kw in (("ppo", dict(batch_size=1, n_epochs=1)), ("a2c", {}), ("trpo", dict(batch_size=1))):
        trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=1, n_steps=1, max_steps=100, eval_every=0,
                                      eval_episodes=1, **kw)
        records = list(trainer())
        assert trainer.step == 100 and trainer.episode_count > 0
        assert 0 < trainer.algorithm.updates < 100
        assert all(np.isfinite(v) for r in records for v in r.losses.values())


def test_box_actions_with_several_dimensions_fit_the_rollout_buffer():
    obs_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    trainer = canter.make_trainer("ppo", "Pendulum-v1", n_envs=2, n_steps=4, eval_every=0, eval_episodes=1)
    trainer.agent.action_space = gym.spaces.Box(-1, 1, (2, 2), np.float32)  # what the buffer is sized from
    trainer.setup()
    algorithm = canter.algorithms.ppo.PPO(obs_space, trainer.agent.action_space, trainer.algorithm.config, seed=0)
    obs = torch.zeros(2, 3)
    with torch.no_grad():
        out = algorithm.act(obs)  # the policy's actions are flat: [n_envs, 4]
    trainer.buffer.add(obs, out.actions, out.log_probs, out.values, np.zeros(2, np.float32), np.zeros(2, bool),
                       np.zeros(2, bool), np.ones(2, bool))
    torch.testing.assert_close(trainer.buffer.actions[0], out.actions)
    trainer.close()


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


@pytest.mark.parametrize("algo", ["ppo", "a2c", "trpo"])
def test_box_actions_of_several_dimensions_reach_the_env_in_its_shape(algo):
    from canter.registry import register
    from support import Box22Actions

    register("env", f"Box22Actions-{algo}-test")(lambda render_mode=None, **kw: Box22Actions())
    trainer = canter.make_trainer(algo, f"Box22Actions-{algo}-test", n_envs=2, n_steps=16, max_steps=320, eval_every=0,
                                  eval_episodes=1)
    list(trainer())  # the env asserts the action shape on every step
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3, 2, 2)
    trainer.close()


def test_scalar_box_actions_reach_the_env_as_scalars():
    """A Box action space of shape (): actions reached the env as arrays of shape (1,), outside the space."""
    from canter.registry import register
    from support import ScalarAction

    register("env", "ScalarAction-ppo-test")(lambda render_mode=None, **kw: ScalarAction())
    trainer = canter.make_trainer("ppo", "ScalarAction-ppo-test", n_envs=2, n_steps=16, max_steps=64, eval_every=0,
                                  eval_episodes=1)
    list(trainer())  # the env asserts the shape of every action
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3,)
    assert trainer.agent.action_space.contains(trainer.agent.predict(np.zeros(3, np.float32)))
    trainer.close()


def test_observation_normalisation_refuses_discrete_observations():
    with pytest.raises(CanterError, match="normalize_obs needs Box observations, not Discrete"):
        canter.make_trainer("ppo", "FrozenLake-v1", normalize_obs=True)


def test_reward_scaling_statistics_skip_the_reset_only_steps():
    # canter's NEXT_STEP stream has one reset-only step (reward 0, valid False) after each episode's
    # end; the return statistics must equal those of the same episodes without it (SB3's VecNormalize)
    from canter.agents.agent import RunningMeanStd

    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=1, normalize_reward=True, eval_episodes=1)
    agent = trainer.agent
    trainer.close()
    rng = np.random.default_rng(0)
    reference, returns = RunningMeanStd(()), np.zeros(1)
    for episode in range(5):
        rewards = rng.normal(size=int(rng.integers(2, 6)))
        for t, r in enumerate(rewards):
            done = np.array([t == len(rewards) - 1])
            agent.scale_reward(np.array([r], np.float32), done, np.array([True]))
            returns = returns * agent.gamma + np.float32(r)
            reference.update(returns)
            returns[done] = 0.0
        agent.scale_reward(np.zeros(1, np.float32), np.array([False]), np.array([False]))  # the reset-only step
    assert agent.ret_rms.count == pytest.approx(reference.count)
    np.testing.assert_allclose([agent.ret_rms.mean, agent.ret_rms.var], [reference.mean, reference.var], rtol=1e-6)


def test_scaled_rewards_match_sb3_vecnormalize_including_its_clip():
    """The same rewards through canter's reward scaling and SB3's VecNormalize (gamma 0.99, clip_reward 10):
    the first steps' return variance is tiny, and unclipped scaled rewards were in the hundreds (SB3: 10)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, normalize_reward=True, eval_episodes=1,
                                  gamma=0.99)
    agent = trainer.agent
    trainer.close()
    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), norm_obs=False, gamma=0.99)
    rng = np.random.default_rng(1)
    for t in range(40):
        rewards = rng.normal(-30.0, 3.0, size=2).astype(np.float32)
        dones = np.array([t % 13 == 12, t % 17 == 16])
        venv.returns = venv.returns * venv.gamma + rewards  # VecNormalize.step_wait's statistics, then scaling
        venv.ret_rms.update(venv.returns)
        expected = venv.normalize_reward(rewards)
        venv.returns[dones] = 0.0
        got = agent.scale_reward(rewards, dones, np.array([True, True]))
        np.testing.assert_allclose(got, expected, rtol=1e-5, err_msg=f"step {t}")
    venv.close()


def test_a_budget_below_one_rollout_is_warned_about():
    from canter.errors import CanterWarning

    with pytest.warns(CanterWarning, match=r"max_steps \(100\) is less than one rollout \(n_steps 64 x 2 envs = 128"):
        trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, max_steps=100, eval_episodes=1)
    list(trainer())
    assert trainer.step == 128
    trainer.close()


def test_a_minibatch_larger_than_the_rollout_is_warned_about():
    """batch_size 4096 with a 128-step rollout trained on whole-rollout minibatches without a word
    (Stable-Baselines3 warns); a batch_size that fits gives no such warning."""
    import warnings

    from canter.errors import CanterWarning

    for algo in ("ppo", "trpo"):
        with pytest.warns(CanterWarning, match=r"batch_size \(4,096\) is larger than one rollout \(128 transitions"):
            canter.make_trainer(algo, "CartPole-v1", n_envs=2, n_steps=64, batch_size=4096, eval_episodes=1).close()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*batch_size", category=CanterWarning)
        canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, batch_size=128, eval_episodes=1).close()


def test_ppo_target_kl_stop_logs_the_minibatch_that_stopped_the_epochs():
    target = 1e-12
    # constant lr: the CartPole preset's linear schedule reaches 0 in the last rollout, whose policy
    # then never changes (its KL is 0, its epochs rightly never stop)
    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=2, n_steps=64, batch_size=32, n_epochs=4, lr=0.5,
                                  lr_schedule="constant", target_kl=target, max_steps=256, eval_every=0,
                                  eval_episodes=1)
    records = list(trainer())
    trainer.close()
    assert trainer.algorithm.updates < 2 * 4 * 4  # the epochs stopped early in both rollouts
    for r in records:  # as SB3 logs it: the stopping minibatch's KL is in the mean
        assert r.losses["approx_kl"] > 1.5 * target


# -- PPO's schedules and its KL early stop ---------------------------------------------------------
def _ppo(**hp):
    from canter.algorithms.ppo import PPO

    torch.manual_seed(0)
    return PPO(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), build(PPO.Config, dict(net_arch=[8], **hp)),
               seed=0)


def test_ppo_linear_schedules_anneal_lr_and_clip_range_to_zero_and_constant_ones_do_not():
    algo = _ppo(lr=1e-3, clip_range=0.2, lr_schedule="linear", clip_schedule="linear")
    for step, frac in [(0, 1.0), (250, 0.75), (1000, 0.0)]:
        algo.set_progress(step, 1000)
        assert algo.clip == pytest.approx(0.2 * frac) and algo.lr == pytest.approx(1e-3 * frac), step
        assert all(g["lr"] == pytest.approx(1e-3 * frac) for g in algo.optimizer.param_groups)
    constant = _ppo(lr=1e-3, clip_range=0.2)
    constant.set_progress(750, 1000)
    assert constant.clip == 0.2 and constant.lr == 1e-3


@pytest.mark.parametrize("kl, steps", [(0.0149, True), (0.0151, False)])
def test_ppo_epochs_stop_when_the_approximate_kl_exceeds_one_and_a_half_times_target_kl(kl, steps):
    algo = _ppo(target_kl=0.01)
    sum(p.sum() for p in algo.model.parameters()).backward()
    before = [p.detach().clone() for p in algo.model.parameters()]
    stats: list = []
    assert algo._step(np.array([0.0, 0.0, 0.0, kl, 0.0], np.float32), stats) is steps
    assert len(stats) == 1 and algo.updates == int(steps)  # the stopping minibatch is logged, not applied
    changed = any(not torch.equal(a, b) for a, b in zip(before, algo.model.parameters()))
    assert changed is steps
