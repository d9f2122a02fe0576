"""Unit tests of TRPO and NPG: the conjugate gradient, the Fisher-vector product, the KL-bounded step and
its line search."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.algorithms.actor_critic import flat
from canter.algorithms.trpo import NPG, TRPO, conjugate_gradient, fisher_vector_product, line_search
from canter.config import build
from canter.data.batch import RolloutBatch
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



def test_npg_step_is_the_direct_solution_of_the_damped_fisher_system():
    """With as many CG iterations as parameters, NPG's step is ``sqrt(2 delta / x^T A x) x`` for
    ``x = A^-1 g``, ``A = F + damping I``, with F the Fisher matrix enumerated over the actions and g
    the surrogate's gradient (the score times the advantage at the old policy), solved directly."""
    damping, target_kl = 0.05, 0.01
    algo = _npg(gym.spaces.Discrete(3), cg_max_steps=100, cg_damping=damping, target_kl=target_kl,
                normalize_advantage=False)
    params = algo.actor_params
    g = torch.Generator().manual_seed(1)
    B = 6
    obs = torch.randn(B, 3, generator=g)
    logp = torch.log_softmax(algo.model.action(obs), -1)
    actions = torch.multinomial(logp.detach().exp(), 1, generator=g).squeeze(1)
    adv = torch.randn(B, generator=g)
    n = flat(params).numel()
    fisher, grad = torch.zeros(n, n, dtype=torch.float64), torch.zeros(n, dtype=torch.float64)
    for s in range(B):
        for a in range(3):
            score = flat(torch.autograd.grad(logp[s, a], params, retain_graph=True)).double()
            fisher += logp[s, a].exp().item() * torch.outer(score, score) / B
            if a == actions[s]:
                grad += adv[s].item() * score / B
    system = fisher + damping * torch.eye(n, dtype=torch.float64)
    x = torch.linalg.solve(system, grad)
    expected = torch.sqrt(2 * target_kl / (x @ system @ x)) * x
    before = flat([p.detach() for p in params]).clone()
    zeros = torch.zeros(B)
    algo._policy_step(RolloutBatch(obs, actions, logp.detach().gather(1, actions[:, None]).squeeze(1), zeros, adv, zeros))
    step = (flat([p.detach() for p in params]) - before).double()
    torch.testing.assert_close(step, expected, rtol=1e-3, atol=1e-4 * expected.abs().max().item())

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
