"""One update of canter's value-based and offline algorithms against a reference written here from
the papers' equations (not canter's code): from identical weights and one fixed minibatch, the loss,
the per-sample priorities where the algorithm keeps them, and the gradient every parameter gets
(after the gradient-norm clip) must agree. The minibatches mix 1-step and 3-step discounts,
terminated and bootstrapped rows and unequal importance weights, so a discount, a termination or a
weight applied to the wrong term fails."""
from __future__ import annotations

import copy

import gymnasium as gym
import pytest
import torch

from canter.data.batch import ReplayBatch

OBS = gym.spaces.Box(-1.0, 1.0, (4,))
ACTIONS = gym.spaces.Discrete(3)
B = 16


def _batch(seed: int, reward_scale: float = 1.0) -> ReplayBatch:
    """``B`` transitions on OBS x ACTIONS: a quarter terminated, half 3-step (discount 0.99 ** 3),
    importance weights in [0.2, 1]."""
    g = torch.Generator().manual_seed(seed)
    terminated = (torch.arange(B) % 4 == 0).float()
    discounts = torch.where(torch.arange(B) % 2 == 0, torch.tensor(0.99), torch.tensor(0.99 ** 3))
    return ReplayBatch(torch.rand(B, 4, generator=g) * 2 - 1, torch.randint(3, (B,), generator=g),
                       torch.randn(B, generator=g) * reward_scale, torch.rand(B, 4, generator=g) * 2 - 1, terminated,
                       discounts, 0.2 + 0.8 * torch.rand(B, generator=g), torch.arange(B))


def _build(cls, config, actions: gym.Space = ACTIONS):  # noqa: ANN001, ANN202
    """``cls(OBS, actions, config)`` with its weights drawn from torch's global generator seeded 0
    (restored afterwards), so the test does not depend on what ran before it."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return cls(OBS, actions, config, seed=0)


def _perturb(net: torch.nn.Module, seed: int, scale: float = 0.3) -> None:
    """Move ``net``'s parameters (a target network made equal to its online one) somewhere else."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))


def _canter_grads(optimizer, params: list[torch.Tensor]) -> dict:  # noqa: ANN001
    """Record the gradients ``optimizer.step`` sees (after canter's clip): ``grads`` the last step's,
    ``steps`` every step's; returns the record."""
    seen: dict = {"steps": []}

    def record() -> None:
        seen["grads"] = [p.grad.clone() for p in params]
        seen["steps"].append(seen["grads"])

    step = optimizer.step
    optimizer.step = lambda *a, **k: (record(), step(*a, **k))[1]
    return seen


def _reference_grads(loss: torch.Tensor, params: list[torch.Tensor], max_norm: float | None) -> list[torch.Tensor]:
    """d loss / d params, scaled down to global norm ``max_norm`` as torch's clip_grad_norm_ does."""
    grads = torch.autograd.grad(loss, params)
    if max_norm is not None:
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        grads = [g * min(1.0, max_norm / (float(norm) + 1e-6)) for g in grads]
    return grads


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """``got`` equals ``want`` elementwise within ``atol + rtol * |want|`` (torch.testing's first call
    imports torch.distributed, ~2 s)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"largest difference {(got - want).abs().max():.3g}"


class _Adam:
    """Kingma & Ba's Adam (betas 0.9, 0.999), bias-corrected, on a list of parameters."""

    def __init__(self, params: list[torch.Tensor], lr: float, eps: float) -> None:
        self.params, self.lr, self.eps, self.t = params, lr, eps, 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    def step(self, grads: list[torch.Tensor]) -> None:
        self.t += 1
        with torch.no_grad():
            for p, g, m, v in zip(self.params, grads, self.m, self.v):
                m.mul_(0.9).add_(0.1 * g)
                v.mul_(0.999).add_(0.001 * g * g)
                p.sub_(self.lr * (m / (1 - 0.9 ** self.t)) / ((v / (1 - 0.999 ** self.t)).sqrt() + self.eps))


def _assert_grads(seen: dict, expected: list[torch.Tensor]) -> None:
    assert len(seen["grads"]) == len(expected)
    for got, want in zip(seen["grads"], expected):
        _close(got, want)


# -- C51 (Bellemare et al. 2017, Algorithm 1) -------------------------------------------------------
def _c51_reference_target(online, target, batch: ReplayBatch, support: torch.Tensor, double_q: bool) -> torch.Tensor:
    """Algorithm 1 of the paper, atom by atom: ``a* = argmax_a Q(x', a)`` (the online network's with
    Double DQN), each atom's probability ``p_j(x', a*)`` moved to ``Tz_j = clip(r + gamma_t z_j)``
    and split over its neighbours ``l = floor(b_j)``, ``u = ceil(b_j)`` as ``(u - b_j)`` and
    ``(b_j - l)`` (all of it to ``l`` when ``b_j`` is an atom)."""
    v_min, v_max, n = float(support[0]), float(support[-1]), len(support)
    dz = (v_max - v_min) / (n - 1)
    with torch.no_grad():
        p_next = torch.softmax(target.logits(batch.next_obs), -1)  # [B, A, N]
        chooser = torch.softmax(online.logits(batch.next_obs), -1) if double_q else p_next
        best = (chooser * support).sum(-1).argmax(1)
        p_best = p_next[torch.arange(B), best].double()  # [B, N]
        gamma_t = batch.discounts.double() * (1.0 - batch.terminated.double())
        m = torch.zeros(B, n, dtype=torch.float64)
        rows = torch.arange(B)
        for j in range(n):  # the paper's loop over atoms, every row at once
            tz = (batch.rewards.double() + gamma_t * float(support[j])).clamp(v_min, v_max)
            b = (tz - v_min) / dz
            lo, up = b.floor().long(), b.ceil().long()
            on_atom = (lo == up).double()
            m.index_put_((rows, lo), p_best[:, j] * (up - b + on_atom), accumulate=True)
            m.index_put_((rows, up), p_best[:, j] * (b - lo), accumulate=True)
    return m.float()


def test_c51_update_is_algorithm_1_of_the_paper_with_double_q_and_importance_weights():
    """The cross-entropy ``-sum_i m_i log p_i(x_t, a_t)`` against Algorithm 1's projected target,
    weighted per sample by the importance weights (the priorities are the unweighted cross-entropies);
    with and without Double DQN, rewards reaching past both ends of the support."""
    from canter.algorithms.c51 import C51, C51Config

    for double_q in (False, True):
        algo = _build(C51, C51Config(net_arch=[16], n_atoms=11, v_min=-2.0, v_max=2.0, double_q=double_q))
        _perturb(algo.q_target, 1)
        batch = _batch(2, reward_scale=1.5)
        online, target = copy.deepcopy(algo.q), copy.deepcopy(algo.q_target)
        m = _c51_reference_target(online, target, batch, algo.q.support, double_q)
        if double_q:  # the two networks' greedy next actions differ on some rows
            assert (online.value(batch.next_obs).argmax(1) != target.value(batch.next_obs).argmax(1)).any()
        assert torch.allclose(m.sum(-1), torch.ones(B), atol=1e-5)
        logp = torch.log_softmax(online.logits(batch.obs), -1)[torch.arange(B), batch.actions]
        per_sample = -(m * logp).sum(-1)
        _assert_learn_matches(algo, online, batch, per_sample)


def _assert_learn_matches(algo, online, batch, per_sample: torch.Tensor) -> None:
    """``algo.learn(batch)``'s loss, priorities and clipped gradients are the reference's: the importance-weighted
    mean of ``per_sample`` (computed through ``online``, a copy of the algorithm's online network)."""
    loss = (batch.weights * per_sample).mean()
    expected = _reference_grads(loss, list(online.parameters()), algo.config.max_grad_norm)
    seen = _canter_grads(algo.optimizer, algo.params)
    info = algo.learn(batch)
    assert abs(info["loss"] - loss.item()) <= 1e-5 * abs(loss.item())
    _close(algo.last_priorities, per_sample.detach(), atol=1e-6)
    _assert_grads(seen, expected)


# -- IQN (Dabney et al. 2018b, eq. 3 and Algorithm 1) -----------------------------------------------
def _quantile_huber_reference(current: torch.Tensor, target: torch.Tensor, taus: torch.Tensor,
                              kappa: float = 1.0) -> torch.Tensor:
    """``1/N' sum_i sum_j rho^kappa_{tau_i}(delta_ij)`` per row, ``delta_ij = target_j - current_i``,
    ``rho^kappa_tau(d) = |tau - 1{d < 0}| L_kappa(d) / kappa`` (Huber ``L_kappa``)."""
    delta = target[:, None, :] - current[:, :, None]  # [B, N, N']
    huber = torch.where(delta.abs() <= kappa, 0.5 * delta ** 2, kappa * (delta.abs() - 0.5 * kappa))
    rho = (taus[:, :, None] - (delta.detach() < 0).float()).abs() * huber / kappa
    return rho.sum(1).mean(1)


def test_iqn_update_is_the_papers_quantile_huber_loss_at_the_sampled_fractions():
    """N online fractions and N' target fractions drawn uniformly (here replayed from a copy of the
    algorithm's generator: the target's first), the greedy next action by the mean target quantile (the
    online network's Q values with Double DQN), ``delta_ij = r + gamma_t Z_{tau'_j}(x', a*) - Z_{tau_i}(x, a)``
    with ``gamma_t`` 0 on terminated rows, the per-sample loss weighted by the importance weights.
    The defaults are the paper's: N = N' = 64, K = 32, 64 cosines."""
    from canter.algorithms.iqn import IQN, IQNConfig

    c = IQNConfig()
    assert (c.n_quantiles, c.n_act_quantiles, c.n_cosines) == (64, 32, 64)
    for double_q in (False, True):
        algo = _build(IQN, IQNConfig(net_arch=[16], double_q=double_q))
        _perturb(algo.q_target, 3)
        batch = _batch(4, reward_scale=3.0)
        online, target = copy.deepcopy(algo.q), copy.deepcopy(algo.q_target)
        g = torch.Generator()
        g.set_state(algo.generator.get_state())
        target_taus, taus = torch.rand(B, 64, generator=g), torch.rand(B, 64, generator=g)
        with torch.no_grad():
            z_next = target.quantiles(batch.next_obs, target_taus)  # [B, A, N']
            best = (online.value(batch.next_obs) if double_q else z_next.mean(-1)).argmax(1)
            if double_q:
                assert (best != z_next.mean(-1).argmax(1)).any()
            gamma_t = batch.discounts * (1.0 - batch.terminated)
            y = batch.rewards[:, None] + gamma_t[:, None] * z_next[torch.arange(B), best]
        current = online.quantiles(batch.obs, taus)[torch.arange(B), batch.actions]  # [B, N]
        per_sample = _quantile_huber_reference(current, y, taus)
        _assert_learn_matches(algo, online, batch, per_sample)


# -- Rainbow as canter registers it: Double, dueling, 3-step, prioritized, QR-DQN head ----------------
@pytest.mark.parametrize("path", ["learn", "phase"])
def test_rainbow_steps_are_double_qr_dqn_on_n_step_returns_with_importance_weights(path):
    """canter's ``rainbow`` (Hessel et al.'s agent with Dabney et al. 2018a's quantile head in place of
    C51's): two gradient steps, one ``learn`` per minibatch (the trainer's path with prioritized replay)
    or one ``learn_phase`` (its path with ``prioritized=false``), against two plain steps: the online
    network's mean quantile picks ``a*``, the target network's quantiles at it give
    ``y_j = r + gamma_t theta'_j``, the quantile Huber loss at the midpoints ``(2i + 1) / 2N`` is
    weighted per sample by the importance weights, Adam with canter's lr and epsilon."""
    from canter.algorithms.base import minibatches
    from canter.algorithms.dqn import Rainbow, RainbowConfig

    config = RainbowConfig(net_arch=[16], n_quantiles=10)
    assert config.double_q and config.dueling and config.prioritized and config.n_step == 3
    algo = _build(Rainbow, config)
    _perturb(algo.q_target, 3)
    parts = [_batch(5, reward_scale=3.0), _batch(6, reward_scale=3.0)]
    batch = ReplayBatch(*(torch.cat(t) for t in zip(*parts)))._replace(indices=torch.arange(2 * B))
    online, target = copy.deepcopy(algo.q), copy.deepcopy(algo.q_target)
    adam = _Adam(list(online.parameters()), config.lr, config.adam_eps)
    taus = ((2 * torch.arange(10) + 1) / 20.0).expand(B, -1)
    losses, grads, priorities = [], [], []
    for mb, _ in minibatches(batch, 2):
        with torch.no_grad():
            best = online.quantiles(mb.next_obs).mean(-1).argmax(1)
            assert (best != target.quantiles(mb.next_obs).mean(-1).argmax(1)).any()
            y = mb.rewards[:, None] + (mb.discounts * (1 - mb.terminated))[:, None] * target.quantiles(
                mb.next_obs)[torch.arange(B), best]
        current = online.quantiles(mb.obs)[torch.arange(B), mb.actions]
        per_sample = _quantile_huber_reference(current, y, taus)
        loss = (mb.weights * per_sample).mean()
        step_grads = _reference_grads(loss, list(online.parameters()), config.max_grad_norm)
        adam.step(step_grads)
        losses.append(loss.item())
        grads.append(step_grads)
        priorities.append(per_sample.detach())
    seen = _canter_grads(algo.optimizer, algo.params)
    stats = algo.learn_phase(batch, 2) if path == "phase" else [algo.learn(mb) for mb, _ in minibatches(batch, 2)]
    for got, want in zip([s["loss"] for s in stats], losses):
        assert abs(got - want) <= 1e-5 * abs(want)
    _close(algo.last_priorities, priorities[1], atol=1e-6)
    for got, want in zip(seen["steps"], grads):
        _assert_grads({"grads": got}, want)
    for got, want in zip(algo.q.parameters(), online.parameters()):
        _close(got, want, rtol=1e-5, atol=1e-6)


# -- SAC for discrete actions (Christodoulou 2019) ----------------------------------------------------
def test_sac_discrete_update_is_christodoulous_with_exact_expectations_over_actions():
    """One update from the paper's equations: the soft target
    ``y = r + gamma_t sum_a' pi(a'|s') (min_i Q'_i(s', a') - alpha log pi(a'|s'))``, the critics'
    ``sum_i 0.5 mean(w (Q_i(s, a) - y)^2)`` (importance weights per sample), then the actor's
    ``mean_s sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a))`` on the updated critics, alpha's
    gradient ``mean(H(pi(.|s)) - target_entropy_scale * log |A|)`` on log alpha, and the Polyak target
    step; Adam for each. Compared: losses, priorities, every gradient and every parameter afterwards."""
    import math

    from canter.algorithms.sac_discrete import DiscreteSAC, DiscreteSACConfig

    config = DiscreteSACConfig(net_arch=[16])
    algo = _build(DiscreteSAC, config)
    _perturb(algo.critic_target, 3)
    batch = _batch(7, reward_scale=2.0)
    ref, target = copy.deepcopy(algo.model), copy.deepcopy(algo.critic_target)
    critic_params, actor_params = list(ref.q.parameters()), list(ref.actor.parameters())
    alpha, log_alpha = float(algo.ent_coef.value), algo.ent_coef.log_alpha.item()
    with torch.no_grad():
        next_logp = torch.log_softmax(ref.action(batch.next_obs), -1)
        soft_v = (next_logp.exp() * (target(ref.encoder(batch.next_obs)).min(0).values - alpha * next_logp)).sum(-1)
        y = batch.rewards + batch.discounts * (1 - batch.terminated) * soft_v
    q = ref.value(batch.obs)[:, torch.arange(B), batch.actions]  # [E, B]
    critic_loss = sum(0.5 * (batch.weights * (q_i - y) ** 2).mean() for q_i in q)
    critic_grads = _reference_grads(critic_loss, critic_params, None)
    _Adam(critic_params, config.lr, 1e-8).step(critic_grads)
    logp = torch.log_softmax(ref.action(batch.obs), -1)
    with torch.no_grad():
        q_min = ref.value(batch.obs).min(0).values  # the updated critics
    actor_loss = (logp.exp() * (alpha * logp - q_min)).sum(-1).mean()
    actor_grads = _reference_grads(actor_loss, actor_params, None)
    _Adam(actor_params, config.lr, 1e-8).step(actor_grads)
    entropy = -(logp.exp() * logp).sum(-1).detach()
    alpha_param = torch.tensor([log_alpha])
    _Adam([alpha_param], config.lr, 1e-8).step([(entropy - 0.89 * math.log(3)).mean().reshape(1)])
    with torch.no_grad():
        for t, p in zip(target.parameters(), critic_params):
            t.mul_(1 - config.tau).add_(config.tau * p)

    seen_critic = _canter_grads(algo.critic_optimizer, list(algo.model.q.parameters()))
    seen_actor = _canter_grads(algo.actor_optimizer, list(algo.model.actor.parameters()))
    stats = algo.learn(batch)
    assert config.target_entropy_scale == 0.89 and algo.ent_coef.target_entropy == 0.89 * math.log(3)
    assert abs(stats["critic_loss"] - critic_loss.item()) <= 1e-5 * abs(critic_loss.item())
    assert abs(stats["actor_loss"] - actor_loss.item()) <= 1e-5 * abs(actor_loss.item())
    _close(algo.last_priorities, (q - y).abs().mean(0).detach(), atol=1e-6)
    _assert_grads(seen_critic, critic_grads)
    _assert_grads(seen_actor, actor_grads)
    for got, want in zip(algo.model.parameters(), ref.parameters()):
        _close(got, want, atol=1e-6)
    for got, want in zip(algo.critic_target.parameters(), target.parameters()):
        _close(got, want, atol=1e-6)
    assert abs(algo.ent_coef.log_alpha.item() - float(alpha_param)) <= 1e-7
    assert algo.ent_coef.log_alpha.item() != log_alpha


# -- behaviour cloning ----------------------------------------------------------------------------------
def test_bc_update_is_maximum_likelihood_of_the_datas_actions():
    """Discrete: ``-mean log softmax(f(s))[a]``; Box: ``mean (tanh f(s) - a)^2`` on actions in
    [-1, 1]; the global gradient-norm clip at ``max_grad_norm`` (here acting: 0.05), then Adam. The
    loss, the clipped gradients and the parameters afterwards agree."""
    from canter.algorithms.bc import BC, BCConfig

    config = BCConfig(net_arch=[16], max_grad_norm=0.05)
    for space in (ACTIONS, gym.spaces.Box(-2.0, 2.0, (2,))):
        algo = _build(BC, config, space)
        batch = _batch(8)
        if isinstance(space, gym.spaces.Box):
            batch = batch._replace(actions=torch.rand(B, 2, generator=torch.Generator().manual_seed(9)) * 2 - 1)
        ref = copy.deepcopy(algo.policy)
        params = list(ref.parameters())
        out = ref(batch.obs)
        if isinstance(space, gym.spaces.Discrete):
            loss = -torch.log_softmax(out, -1)[torch.arange(B), batch.actions].mean()
        else:
            loss = ((out - batch.actions) ** 2).mean()
        norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in torch.autograd.grad(loss, params,
                                                                                            retain_graph=True)]))
        assert norm > config.max_grad_norm  # the clip acts
        grads = _reference_grads(loss, params, config.max_grad_norm)
        _Adam(params, config.lr, 1e-8).step(grads)
        seen = _canter_grads(algo.optimizer, algo.params)
        info = algo.learn(batch)
        assert abs(info["loss"] - loss.item()) <= 1e-6 * abs(loss.item())
        _assert_grads(seen, grads)
        for got, want in zip(algo.policy.parameters(), params):
            _close(got, want, atol=1e-6)


# -- TD3+BC (Fujimoto & Gu 2021) -------------------------------------------------------------------------
def test_td3bc_two_updates_are_the_papers():
    """Two updates from the paper's algorithm: each a critic step on
    ``sum_i mean((Q_i(s, a) - y)^2)``, ``y = r + gamma_t min_i Q'_i(s', clip(mu'(s') + clip(sigma eps, -0.5, 0.5), -1, 1))``
    (sigma 0.4 here, the paper's 0.2 the default; eps replayed from a copy of the algorithm's generator); the second (policy delay 2) also an actor
    step on ``-lambda mean Q_1(s, mu(s)) + mean (mu(s) - a)^2``, ``lambda = 2.5 / mean|Q_1|`` held
    constant, on the updated critics, then Polyak steps (0.005) of both targets. Losses and every
    parameter afterwards (online and target) agree; the defaults are the paper's."""
    from canter.algorithms.td3bc import TD3BC, TD3BCConfig

    box = gym.spaces.Box(-1.0, 1.0, (2,))
    c = TD3BCConfig()
    assert (c.alpha, c.lr, c.batch_size, c.tau, c.policy_delay, c.target_policy_noise, c.target_noise_clip,
            c.net_arch, c.gamma, c.normalize_obs) == (2.5, 3e-4, 256, 0.005, 2, 0.2, 0.5, [256, 256], 0.99, True)
    config = TD3BCConfig(net_arch=[16], target_policy_noise=0.4)  # 0.4: the clip at 0.5 acts on ~20% of draws
    algo = _build(TD3BC, config, box)
    _perturb(algo.actor_target, 3)
    _perturb(algo.critic_target, 4)
    g = torch.Generator().manual_seed(10)
    batches = [_batch(11 + k)._replace(actions=torch.rand(B, 2, generator=g) * 2 - 1, weights=torch.ones(B))
               for k in range(2)]
    actor, critic = copy.deepcopy(algo.actor), copy.deepcopy(algo.critic)
    actor_t, critic_t = copy.deepcopy(algo.actor_target), copy.deepcopy(algo.critic_target)
    actor_adam = _Adam(list(actor.parameters()), config.lr, 1e-8)
    critic_adam = _Adam(list(critic.parameters()), config.lr, 1e-8)
    noise = torch.Generator()
    noise.set_state(algo.generator.get_state())
    critic_losses = []
    for batch in batches:
        with torch.no_grad():
            eps = 0.4 * torch.randn(B, 2, generator=noise)
            assert (eps.abs() > 0.5).any()
            next_a = (actor_t(batch.next_obs) + eps.clamp(-0.5, 0.5)).clamp(-1.0, 1.0)
            y = batch.rewards + batch.discounts * (1 - batch.terminated) * critic_t(batch.next_obs, next_a).min(0).values
        loss = sum(((q_i - y) ** 2).mean() for q_i in critic(batch.obs, batch.actions))
        critic_adam.step(_reference_grads(loss, list(critic.parameters()), None))
        critic_losses.append(loss.item())
    pi = actor(batches[1].obs)
    q1 = critic(batches[1].obs, pi)[0]
    actor_loss = -2.5 / q1.abs().mean().detach() * q1.mean() + ((pi - batches[1].actions) ** 2).mean()
    actor_adam.step(_reference_grads(actor_loss, list(actor.parameters()), None))
    with torch.no_grad():
        for net, target in ((actor, actor_t), (critic, critic_t)):
            for t, p in zip(target.parameters(), net.parameters()):
                t.mul_(1 - config.tau).add_(config.tau * p)

    stats = [algo.learn(b) for b in batches]
    for got, want in zip([s["critic_loss"] for s in stats], critic_losses):
        assert abs(got - want) <= 1e-5 * abs(want)
    assert "actor_loss" not in stats[0] and abs(stats[1]["actor_loss"] - actor_loss.item()) <= 1e-5 * abs(
        actor_loss.item())
    for mine, ref in ((algo.actor, actor), (algo.critic, critic), (algo.actor_target, actor_t),
                      (algo.critic_target, critic_t)):
        for got, want in zip(mine.parameters(), ref.parameters()):
            _close(got, want, atol=1e-6)
