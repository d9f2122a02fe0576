"""DDPG, TD3, SAC, discrete SAC and the DQN extensions: losses, gradient isolation between actor and critic,
the quantile Huber loss and the entropy coefficient."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.data import ReplayBatch
from canter.errors import CanterError
from canter.models.distributional import quantile_huber_loss
from support import TINY


def _batch(trainer, n: int = 32) -> ReplayBatch:
    """A random batch in the trainer's spaces (algorithm action space)."""
    g = torch.Generator().manual_seed(0)
    obs_dim = trainer.env.single_observation_space.shape[0]
    space = trainer.agent.action_space
    if isinstance(space, gym.spaces.Discrete):
        actions = torch.randint(space.n, (n,), generator=g)
    else:
        actions = torch.rand((n,) + space.shape, generator=g) * 2 - 1
    return ReplayBatch(torch.randn(n, obs_dim, generator=g), actions, torch.randn(n, generator=g),
                       torch.randn(n, obs_dim, generator=g), (torch.rand(n, generator=g) < 0.2).float(),
                       torch.full((n,), 0.99), torch.ones(n), torch.arange(n))


def _grads(module: torch.nn.Module) -> list[torch.Tensor | None]:
    return [p.grad for p in module.parameters()]


def _zero(module: torch.nn.Module) -> None:
    for p in module.parameters():
        p.grad = None


@pytest.mark.parametrize("algo, env", [("sac", "Pendulum-v1"), ("td3", "Pendulum-v1"), ("ddpg", "Pendulum-v1"),
                                       ("sac_discrete", "CartPole-v1")])
def test_critic_loss_leaves_actor_gradients_at_zero_and_vice_versa(algo, env):
    trainer = canter.make_trainer(algo, env, **TINY)
    a = trainer.algorithm
    model = a.model
    actor, critic = model.actor, (model.critic if hasattr(model, "critic") else model.q)
    batch = _batch(trainer)
    alpha = (a.ent_coef.value,) if hasattr(a, "ent_coef") else ()
    _zero(model)
    a.critic_loss(batch, *alpha)[0].backward()
    assert all(g is None for g in _grads(actor)), "critic loss reached the actor"
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(critic))
    _zero(model)
    out = a.actor_loss(batch.obs, *alpha)
    (out[0] if isinstance(out, tuple) else out).backward()
    assert all(g is None for g in _grads(critic)), "actor loss reached the critic"
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(actor))
    assert all(p.requires_grad for p in critic.parameters())  # unfrozen again after the actor loss
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_critic_parameters_frozen_by_the_user_stay_frozen(algo):
    """The actor loss froze the critic's parameters for its pass and then set requires_grad on all of
    them, also on those a user had frozen (a pretrained encoder): the critic optimizer then trained them."""
    trainer = canter.make_trainer(algo, "Pendulum-v1", **TINY)
    a = trainer.algorithm
    fixed = a.critic.q[0][0].weight
    fixed.requires_grad_(False)
    before = fixed.detach().clone()
    for _ in range(3):
        a.learn(_batch(trainer))
    trainer.close()
    assert not fixed.requires_grad and torch.equal(fixed.detach(), before)
    assert all(p.requires_grad for p in a.actor.parameters())


def test_sac_log_prob_matches_torch_distributions():
    trainer = canter.make_trainer("sac", "Pendulum-v1", **TINY)
    a = trainer.algorithm
    obs = torch.randn(64, 3)
    a.generator.manual_seed(5)
    actions, log_prob = a.sample(obs)
    mean, log_std, _ = a.actor(obs)
    u = torch.atanh(actions.clamp(-1 + 1e-6, 1 - 1e-6)).double()
    ref = torch.distributions.Normal(mean.double(), log_std.exp().double()).log_prob(u).sum(-1)
    ref = ref - torch.log(1 - torch.tanh(u) ** 2).sum(-1)
    torch.testing.assert_close(log_prob.double(), ref, rtol=1e-3, atol=1e-3)


def test_td3_target_smoothing_and_clipping():
    trainer = canter.make_trainer("td3", "Pendulum-v1", target_policy_noise=0.0, **TINY)
    a = trainer.algorithm
    batch = _batch(trainer)
    with torch.no_grad():
        next_a = a.actor_target(batch.next_obs)
        q = a.critic_target(batch.next_obs, next_a).min(0).values
        y = batch.rewards + 0.99 * (1 - batch.terminated) * q
        expected = ((a.critic(batch.obs, batch.actions) - y) ** 2).mean(1).sum()
        loss, td = a.critic_loss(batch)
    torch.testing.assert_close(loss, expected)
    assert td.shape == (2, 32)


def test_quantile_huber_loss_by_hand():
    # one sample, two predicted quantiles (tau 0.25, 0.75), one target 1.0
    current = torch.tensor([[0.0, 2.0]])
    target = torch.tensor([[1.0]])
    # u = target - current = [1, -1]: huber 0.5 each; weights |0.25 - 0| and |0.75 - 1|
    assert quantile_huber_loss(current, target).item() == pytest.approx(0.25 * 0.5 + 0.25 * 0.5)
    far = quantile_huber_loss(torch.tensor([[0.0]]), torch.tensor([[3.0]]))  # linear part: 0.5 * (3 - 0.5)
    assert far.item() == pytest.approx(0.5 * 2.5)


def _autograd_quantile_huber(current, target, kappa):
    """The loss written plainly (autograd differentiates it): the reference for the hand-derived one."""
    n = current.shape[-1]
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)
    huber = torch.where(delta.abs() <= kappa, 0.5 * delta.pow(2), kappa * (delta.abs() - 0.5 * kappa))
    tau = (torch.arange(n, dtype=current.dtype) + 0.5).div(n).unsqueeze(-1)
    return ((tau - (delta.detach() < 0).to(current.dtype)).abs() * huber / kappa).sum(-2).mean(-1)


@pytest.mark.parametrize("kappa", [1.0, 0.5, 2.0])
def test_quantile_huber_loss_gradient_equals_autograd(kappa):
    g = torch.Generator().manual_seed(0)
    current = (3 * torch.randn(3, 16, 25, generator=g, dtype=torch.float64)).requires_grad_()
    target = 3 * torch.randn(16, 46, generator=g, dtype=torch.float64)
    target[:, :2] = current.detach()[0, :, :2]  # exact ties with some predictions
    weights = torch.rand(3, 16, generator=g, dtype=torch.float64)
    ours = (weights * quantile_huber_loss(current, target.unsqueeze(0), kappa)).sum()
    theirs = (weights * _autograd_quantile_huber(current, target.unsqueeze(0), kappa)).sum()
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(torch.autograd.grad(ours, current)[0], torch.autograd.grad(theirs, current)[0])
    with pytest.raises(ValueError, match="target as a constant"):
        quantile_huber_loss(current, current.detach().requires_grad_())



@pytest.mark.parametrize("algo", ["sac", "tqc"])
@pytest.mark.parametrize("act_dim", [1, 3])
def test_the_default_entropy_target_is_minus_the_action_dimension(algo, act_dim):
    """Haarnoja et al. (and SB3): ``-dim(A)`` for a ``Box(act_dim)``; ``target_entropy`` overrides it."""
    from canter.registry import lookup

    cls = lookup("algorithm", algo)
    spaces = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-2, 2, (act_dim,), np.float32)
    assert cls(*spaces, cls.Config(net_arch=[8]), seed=0).ent_coef.target_entropy == -float(act_dim)
    assert cls(*spaces, cls.Config(net_arch=[8], target_entropy=0.5), seed=0).ent_coef.target_entropy == 0.5

def test_ent_coef_parsing():
    from canter.algorithms.offpolicy import parse_ent_coef

    assert parse_ent_coef("auto") == (True, 1.0)
    assert parse_ent_coef("auto_0.1") == (True, 0.1)
    assert parse_ent_coef("0.2") == (False, 0.2)
    assert parse_ent_coef("0") == (False, 0.0)  # no entropy bonus: Stable-Baselines3 takes ent_coef=0.0 (was refused)
    for bad in ("-1", "auto_", "x", "auto_0", "nan", "inf"):
        with pytest.raises(CanterError):
            parse_ent_coef(bad)


@pytest.mark.parametrize("algo, env", [("sac", "Pendulum-v1"), ("sac_discrete", "CartPole-v1")])
def test_a_zero_entropy_coefficient_trains_with_finite_losses(algo, env):
    import canter

    trainer = canter.make_trainer(algo, env=env, ent_coef="0", max_steps=160, learning_starts=100, batch_size=16,
                                  net_arch=[16], eval_episodes=0)
    losses = [r.losses for r in trainer() if r.losses]
    trainer.close()
    assert losses and all(np.isfinite(list(r.values())).all() and r["ent_coef"] == 0.0 for r in losses), losses


def test_learned_entropy_coefficient_takes_the_autograd_adam_step():
    """EntropyCoef sets log_alpha's gradient in closed form; it must equal autograd's for
    ``log_alpha * mean(entropy - target)`` and move log_alpha the way torch.optim.Adam does."""
    from canter.algorithms.offpolicy import EntropyCoef

    coef = EntropyCoef("auto_0.5", lr=0.01, target_entropy=0.3, device=torch.device("cpu"))
    ref = torch.tensor(float(np.log(0.5)), requires_grad=True)
    opt = torch.optim.Adam([ref], lr=0.01)
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        entropy = torch.rand(64, generator=g) * 1.2
        stats = coef.update(entropy)
        loss = ref * (entropy - 0.3).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert stats["ent_coef_loss"] == pytest.approx(loss.item(), rel=1e-5, abs=1e-7)
        assert coef.log_alpha.item() == pytest.approx(ref.item(), rel=1e-5, abs=1e-7)
    assert coef.log_alpha.item() != pytest.approx(float(np.log(0.5)))  # it moved
