"""Numerical equivalence with Stable-Baselines3 as a reference: canter's DQN, SAC and TD3 updates
against SB3's ``train`` from identical weights, identical minibatches and identical noise (DQN's tests:
test_reference_sb3_dqn.py, with the helpers here).

Each test builds both algorithms with their default hyperparameters (and checks that the defaults
this comparison relies on agree), copies canter's networks into SB3's layer by layer, makes SB3's
``train`` draw the same minibatches by replacing its ``replay_buffer.sample``, takes several
gradient steps in both, and compares the losses and every parameter afterwards (online and target
networks, SAC's entropy coefficient). Parameters must agree to 0.1% of how far the steps moved
them (a few entries to 5%, see :func:`_assert_params_close`), losses to 1e-5 relative: a changed
discount, learning rate, Adam epsilon, clip norm, Polyak rate, policy delay or noise fails.

Where the libraries differ by design, the comparison is configured around it and says so: SB3's
1e-6 inside SAC's tanh log-determinant (set to 0 in SB3 here; canter's form is exact).
"""
from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import SAC as SB3SAC  # noqa: E402
from stable_baselines3 import TD3 as SB3TD3  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.type_aliases import ReplayBufferSamples  # noqa: E402

from canter.algorithms.sac import SAC, SACConfig  # noqa: E402
from canter.algorithms.td3 import TD3, TD3Config  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402

STEPS = 4  # gradient steps per comparison
F32_EPS = torch.finfo(torch.float32).eps


# -- helpers ------------------------------------------------------------------------------------
def _sb3(cls, env_id: str, **kw):
    """An SB3 model on ``env_id`` with a silent logger (``train`` records its losses into it)."""
    model = cls("MlpPolicy", gym.make(env_id), device="cpu", seed=0, **kw)
    model.set_logger(Logger(None, []))
    return model


def _feed(model, batches: list[ReplayBatch]) -> None:
    """Make SB3's ``train`` draw ``batches`` in order, shaped as SB3's buffer returns them:
    ``[B, 1]`` rewards and dones, ``[B, 1]`` int64 actions for Discrete (no ``discounts``: SB3 then
    uses its ``gamma``, canter the batch's ``discounts``, 0.99 for both)."""
    samples = []
    for b in batches:
        assert bool((b.discounts == model.gamma).all()) and bool((b.weights == 1).all())
        actions = b.actions.long().view(-1, 1) if b.actions.dim() == 1 else b.actions.clone()
        samples.append(ReplayBufferSamples(
            observations=b.obs.clone(), actions=actions, next_observations=b.next_obs.clone(),
            dones=b.terminated.view(-1, 1).clone(), rewards=b.rewards.view(-1, 1).clone(),
        ))
    queue = iter(samples)
    model.replay_buffer.sample = lambda batch_size, env=None: next(queue)


def _params(net: torch.nn.Module | list) -> list[torch.Tensor]:
    return [p.detach().clone() for p in (net.parameters() if isinstance(net, torch.nn.Module) else net)]


def _copy(src: torch.nn.Module | list, dst: torch.nn.Module | list) -> None:
    """Copy parameters in order, in place (both libraries' optimizers keep their tensors)."""
    src_params = list(src.parameters()) if isinstance(src, torch.nn.Module) else list(src)
    dst_params = list(dst.parameters()) if isinstance(dst, torch.nn.Module) else list(dst)
    assert [p.shape for p in src_params] == [p.shape for p in dst_params]
    with torch.no_grad():
        for s, d in zip(src_params, dst_params):
            d.copy_(s)


def _perturb(net: torch.nn.Module, scale: float) -> None:
    """Move every parameter by seeded noise: target networks unlike the online ones (as after
    earlier training), so that the comparison sees which network each library uses where."""
    with torch.no_grad():
        for i, p in enumerate(net.parameters()):
            p.add_(scale * torch.randn(p.shape, generator=torch.Generator().manual_seed(100 + i)))


def _max_change(before: list[torch.Tensor], after: torch.nn.Module | list) -> float:
    """The largest change of any parameter entry since ``before``."""
    return max((a - b).abs().max().item() for a, b in zip(_params(after), before))


def _assert_params_close(ours, theirs, what: str, before: list[torch.Tensor], min_change: float = 0.0) -> None:
    """Parameters equal up to 0.1% of how far the update moved them (plus a few float32 roundings of
    their size). ``before``: canter's parameters before the update, which must have moved some entry
    by more than ``min_change``.

    Up to 0.1% of a tensor's entries may differ by up to 5% of that movement: Adam divides each
    gradient entry by its own running magnitude, so an entry whose gradient is a near-cancelling
    sum of ~1e-8 moves by a fraction of the learning rate that depends on float32 summation order,
    which differs between the libraries' matrix-product kernels (a few in 10^5 entries here).
    """
    ours, theirs = _params(ours), _params(theirs)
    assert len(ours) == len(theirs) == len(before)
    change = _max_change(before, ours)
    assert change > min_change, f"{what}: the update moved no parameter by more than {change:.3g}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        rounding = 4 * F32_EPS * a.abs().max().item()
        err = (a - b).abs()
        far = int((err > 1e-3 * change + rounding).sum())
        assert far <= a.numel() // 1000 and err.max().item() <= 0.05 * change + rounding, (
            f"{what} parameter {i} {tuple(a.shape)}: {far} entries differ by more than {1e-3 * change + rounding:.3g}, "
            f"the most by {err.max().item():.3g}")


def _assert_same_adam(ours: torch.optim.Optimizer, theirs: torch.optim.Optimizer) -> None:
    """Both Adam with the same learning rate, betas, epsilon (SB3's off-policy policies use torch's
    1e-8, unlike its on-policy ones) and no weight decay."""
    assert type(theirs) is torch.optim.Adam
    a, b = ours.param_groups[0], theirs.param_groups[0]
    assert (a["lr"], a["eps"], tuple(a["betas"]), a["weight_decay"]) == (
        b["lr"], b["eps"], tuple(b["betas"]), b["weight_decay"])


def _assert_relu_mlp(net: torch.nn.Sequential, net_arch: list[int]) -> None:
    """An SB3 MLP with ``net_arch`` hidden layers and ReLU between them (canter's default activation;
    the sizes are checked again, layer by layer, when the weights are copied)."""
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    hidden = [m for m in net if not isinstance(m, (torch.nn.Linear, torch.nn.Tanh))]
    assert [m.out_features for m in linears][:len(net_arch)] == list(net_arch)
    assert hidden and all(type(m) is torch.nn.ReLU for m in hidden)


def _logged(model, key: str) -> float:
    return float(model.logger.name_to_value[f"train/{key}"])


def _replay_batch(rng: np.random.Generator, i: int, obs: np.ndarray, actions: np.ndarray,
                  rewards: np.ndarray) -> ReplayBatch:
    """Minibatch ``i``: observations ``obs[0]``, next observations ``obs[1]``, about a quarter
    terminated (drawn from ``rng``), one-step discounts 0.99, unit weights."""
    batch = len(actions)
    return ReplayBatch(
        obs=torch.from_numpy(obs[0]), actions=torch.from_numpy(actions),
        rewards=torch.from_numpy(rewards.astype(np.float32)), next_obs=torch.from_numpy(obs[1]),
        terminated=torch.from_numpy((rng.random(batch) < 0.25).astype(np.float32)),
        discounts=torch.full((batch,), 0.99), weights=torch.ones(batch),
        indices=torch.arange(i * batch, (i + 1) * batch),
    )


# -- DQN ----------------------------------------------------------------------------------------
def _discrete_batches(n: int, batch: int, n_actions: int, seed: int) -> list[ReplayBatch]:
    """``n`` minibatches of CartPole-shaped transitions; rewards spread so that the TD errors fall on
    both sides of the Huber loss's kink; about a quarter terminated. Every other minibatch has
    observations 30 times larger: gradient norms above ``max_grad_norm`` (10), clipped steps."""
    rng = np.random.default_rng(seed)
    scale = np.array([1.0, 2.0, 0.2, 2.0], dtype=np.float32)
    out = []
    for i in range(n):
        obs = (rng.standard_normal((2, batch, 4)) * scale * (30.0 if i % 2 else 1.0)).astype(np.float32)
        out.append(_replay_batch(rng, i, obs, rng.integers(0, n_actions, batch), rng.normal(1.0, 2.0, batch)))
    assert all(b.terminated.any() and not b.terminated.all() for b in out)
    return out


def _cat(batches: list[ReplayBatch]) -> ReplayBatch:
    return ReplayBatch(*(torch.cat(fields) for fields in zip(*batches)))


def _record_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[float]:
    """Record the value of every ``torch.nn.functional.<name>`` call (SB3's per-step losses)."""
    recorded: list[float] = []
    original = getattr(torch.nn.functional, name)

    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        out = original(*args, **kwargs)
        recorded.append(out.item())
        return out

    monkeypatch.setattr(torch.nn.functional, name, wrapper)
    return recorded


# -- SAC and TD3 ----------------------------------------------------------------------------------
def _box_batches(obs_space: gym.spaces.Box, act_dim: int, n: int, batch: int, seed: int) -> list[ReplayBatch]:
    """``n`` minibatches of Box transitions: observations from ``obs_space``, actions in [-1, 1]
    (both libraries store Box actions rescaled to it), about a quarter terminated."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        obs = rng.uniform(obs_space.low, obs_space.high, (2, batch) + obs_space.shape).astype(np.float32)
        actions = rng.uniform(-1, 1, (batch, act_dim)).astype(np.float32)
        out.append(_replay_batch(rng, i, obs, actions, rng.normal(-3.0, 2.0, batch)))
    assert all(b.terminated.any() and not b.terminated.all() for b in out)
    return out


def _canter_noise(monkeypatch: pytest.MonkeyPatch, generator: torch.Generator, noises: list[torch.Tensor]):
    """``torch.randn(..., generator=generator)`` (canter's draws from an algorithm's own generator)
    returns ``noises`` in order; other calls draw as usual. Returns the iterator, to check that
    every tensor was used."""
    queue = iter(noises)
    original = torch.randn

    def randn(*size, generator=None, **kwargs):  # noqa: ANN002, ANN003
        if generator is not canter_generator:
            return original(*size, generator=generator, **kwargs)
        noise = next(queue)
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        assert tuple(noise.shape) == tuple(shape)
        return noise.clone()

    canter_generator = generator
    monkeypatch.setattr(torch, "randn", randn)
    return queue


def _assert_shared_defaults(c, theirs) -> None:
    """The off-policy defaults both libraries must agree on (canter config ``c``, SB3 model ``theirs``)."""
    assert (c.lr, c.gamma, c.batch_size, c.tau, c.train_freq, c.gradient_steps, c.learning_starts) == (
        theirs.learning_rate, theirs.gamma, theirs.batch_size, theirs.tau, theirs.train_freq.frequency,
        theirs.gradient_steps, theirs.learning_starts)


def _copy_actor_critic(ours, theirs) -> None:
    """Check SB3's actor and critics are ReLU MLPs of canter's ``net_arch`` with the same Adam settings,
    move canter's target networks away from the online ones, then copy canter's deterministic actor,
    critic and both targets into SB3's (TD3 / DDPG layout)."""
    _assert_relu_mlp(theirs.actor.mu, ours.config.net_arch)
    for q in theirs.critic.q_networks:
        _assert_relu_mlp(q, ours.config.net_arch)
    _assert_same_adam(ours.actor_optimizer, theirs.actor.optimizer)
    _assert_same_adam(ours.critic_optimizer, theirs.critic.optimizer)
    _perturb(ours.actor_target, 0.05)
    _perturb(ours.critic_target, 0.05)
    _copy(ours.actor, theirs.actor)  # canter: tanh(MLP); SB3: MLP ending in nn.Tanh
    _copy(ours.actor_target, theirs.actor_target)
    _copy(ours.critic, theirs.critic)
    _copy(ours.critic_target, theirs.critic_target)


def _sb3_sac_actor_params(actor) -> list[torch.Tensor]:
    """SB3's SAC actor parameters in canter's layout: canter's one head layer is SB3's ``mu`` and
    ``log_std`` layers stacked, mean rows first."""
    return [*actor.latent_pi.parameters(), torch.cat([actor.mu.weight, actor.log_std.weight]),
            torch.cat([actor.mu.bias, actor.log_std.bias])]


def _copy_squashed_actor_critic(ours, theirs) -> None:
    """Move canter's target critics away from the online ones, then copy canter's squashed Gaussian
    actor, critics and target critics into SB3's (SAC layout; sb3-contrib's TQC shares it)."""
    _perturb(ours.critic_target, 0.05)
    _copy(ours.actor.trunk, theirs.actor.latent_pi)
    with torch.no_grad():
        mean_w, log_std_w = ours.actor.head.weight.chunk(2)
        mean_b, log_std_b = ours.actor.head.bias.chunk(2)
    _copy([mean_w, mean_b, log_std_w, log_std_b], [*theirs.actor.mu.parameters(), *theirs.actor.log_std.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(_params(ours.actor), _sb3_sac_actor_params(theirs.actor)))
    _copy(ours.critic, theirs.critic)  # qf0, qf1 in order: canter's critic.q[0], critic.q[1]
    _copy(ours.critic_target, theirs.critic_target)
    assert ours.ent_coef.log_alpha.item() == theirs.log_ent_coef.item() == 0.0  # alpha starts at 1
    # A deliberate difference: SB3's tanh correction is log(1 - tanh(u)^2 + 1e-6), the epsilon
    # against log(0); canter's is exact, 2 (log 2 - u - softplus(-2u)), finite for every u. On these
    # batches the epsilon moves SB3's log-probabilities by up to ~2e-4 (losses by ~1e-5 relative);
    # without it both compute the same function, which is what is compared here.
    assert theirs.actor.action_dist.epsilon == 1e-6
    theirs.actor.action_dist.epsilon = 0.0


def _pendulum_pair(cls, config, sb3_cls):
    """canter's ``cls`` with ``config`` and SB3's ``sb3_cls`` (its defaults) on Pendulum-v1, checked to
    share the off-policy defaults the comparisons rely on."""
    env = gym.make("Pendulum-v1")
    torch.manual_seed(0)
    ours = cls(env.observation_space, env.action_space, config, seed=0)
    theirs = _sb3(sb3_cls, "Pendulum-v1")
    _assert_shared_defaults(ours.config, theirs)
    return ours, theirs

def _sac_pair() -> tuple[SAC, SB3SAC]:
    """canter's and SB3's SAC on Pendulum-v1 with their defaults (learned entropy coefficient from
    1, target entropy -dim(A), twin critics, target update every step), identical networks."""
    ours, theirs = _pendulum_pair(SAC, SACConfig(), SB3SAC)
    c = ours.config
    assert (c.ent_coef, c.target_update_interval, c.n_critics) == (
        theirs.ent_coef, theirs.target_update_interval, theirs.policy.critic.n_critics)
    assert ours.ent_coef.target_entropy == theirs.target_entropy == -1.0  # -dim(A)
    assert not c.use_sde and not theirs.use_sde
    _assert_relu_mlp(theirs.actor.latent_pi, c.net_arch)
    for q in theirs.critic.q_networks:
        _assert_relu_mlp(q, c.net_arch)
    _assert_same_adam(ours.actor_optimizer, theirs.actor.optimizer)
    _assert_same_adam(ours.critic_optimizer, theirs.critic.optimizer)
    _assert_same_adam(ours.ent_coef.optimizer, theirs.ent_coef_optimizer)

    _copy_squashed_actor_critic(ours, theirs)
    return ours, theirs


def test_sac_gradient_steps_match_sb3(monkeypatch):
    """STEPS SAC steps with identical reparameterisation noise. Both libraries take, per step: the
    entropy coefficient's Adam step (on alpha's value before it), the twin critics against the
    target critics' minimum with the entropy bonus, the actor through the updated critics, and the
    Polyak target update, in that order; so the end states are compared directly.

    The noise: SB3 draws it from torch's global generator in ``Normal.rsample``, canter from the
    algorithm's own generator with ``torch.randn``; both get the same tensors, in the order both
    draw them (actions for ``obs``, then for ``next_obs``, each step).
    """
    _squashed_steps_match(*_sac_pair(), monkeypatch, batch_seed=3, noise_seed=4)


def _squashed_steps_match(ours, theirs, monkeypatch: pytest.MonkeyPatch, batch_seed: int, noise_seed: int) -> None:
    """STEPS gradient steps of a SAC-family algorithm in both libraries (``ours``, ``theirs`` built with
    identical networks) on the same Pendulum minibatches and reparameterisation noise: the logged
    losses, every actor and critic parameter, the target critics and the entropy coefficient agree."""
    batch_size = ours.config.batch_size
    batches = _box_batches(gym.make("Pendulum-v1").observation_space, 1, STEPS, batch_size, seed=batch_seed)
    g = torch.Generator().manual_seed(noise_seed)
    # within +-2: |u| stays where SB3's float32 log(1 - tanh(u)^2) keeps its digits (1 - tanh(u)^2
    # cancels as tanh(u) -> 1; from |u| ~ 5 on it is off by 1e-3 and more; canter's form is exact)
    noises = [torch.randn(batch_size, 1, generator=g).clamp(-2, 2) for _ in range(2 * STEPS)]
    actor_before, critic_before, target_before = _params(ours.actor), _params(ours.critic), _params(ours.critic_target)

    with monkeypatch.context() as m:
        ours_queue = _canter_noise(m, ours.generator, noises)
        stats = [ours.learn(b) for b in batches]
    assert next(ours_queue, None) is None
    _feed(theirs, batches)
    sb3_queue = iter(noises)
    with monkeypatch.context() as m:
        m.setattr(torch.distributions.Normal, "rsample",
                  lambda self, sample_shape=torch.Size(): self.loc + next(sb3_queue) * self.scale)
        theirs.train(gradient_steps=STEPS, batch_size=batch_size)
    assert next(sb3_queue, None) is None

    for key in ("critic_loss", "actor_loss", "ent_coef", "ent_coef_loss"):  # SB3 logs means over the steps
        ours_mean = np.mean([s[key] for s in stats])
        assert ours_mean == pytest.approx(_logged(theirs, key), rel=1e-5, abs=1e-6), key
    min_change = 0.5 * STEPS * ours.config.lr
    _assert_params_close(ours.actor, _sb3_sac_actor_params(theirs.actor), "actor", actor_before, min_change)
    _assert_params_close(ours.critic, theirs.critic, "critic", critic_before, min_change)
    _assert_params_close(ours.critic_target, theirs.critic_target, "target critic", target_before)
    log_alpha = ours.ent_coef.log_alpha.item()
    assert abs(log_alpha) > min_change
    assert log_alpha == pytest.approx(theirs.log_ent_coef.item(), rel=1e-4)


def _td3_pair() -> tuple[TD3, SB3TD3]:
    """canter's and SB3's TD3 on Pendulum-v1 with their defaults, identical networks."""
    ours, theirs = _pendulum_pair(TD3, TD3Config(), SB3TD3)
    c = ours.config
    assert (c.policy_delay, c.target_policy_noise, c.target_noise_clip, c.n_critics) == (
        theirs.policy_delay, theirs.target_policy_noise, theirs.target_noise_clip, theirs.policy.critic.n_critics)
    assert (c.policy_delay, c.tau) == (2, 0.005)
    _copy_actor_critic(ours, theirs)
    return ours, theirs


def test_td3_gradient_steps_match_sb3(monkeypatch):
    """STEPS TD3 steps (two actor and target updates with policy_delay 2) with the same target
    policy smoothing noise. SB3 draws it with ``Tensor.normal_(0, target_policy_noise)`` on torch's
    global generator, canter with ``torch.randn(generator=...) * target_policy_noise``; both get
    ``target_policy_noise * z`` for the same ``z``, spread wide enough that the 0.5 clip bites."""
    ours, theirs = _td3_pair()
    c = ours.config
    batches = _box_batches(gym.make("Pendulum-v1").observation_space, 1, STEPS, c.batch_size, seed=5)
    g = torch.Generator().manual_seed(6)
    z = [2.0 * torch.randn(c.batch_size, 1, generator=g) for _ in range(STEPS)]
    assert all(bool(((zi * c.target_policy_noise).abs() > c.target_noise_clip).any()) for zi in z)
    modules = ("actor", "actor_target", "critic", "critic_target")
    before = {name: _params(getattr(ours, name)) for name in modules}

    with monkeypatch.context() as m:
        ours_queue = _canter_noise(m, ours.generator, z)
        stats = [ours.learn(b) for b in batches]
    assert next(ours_queue, None) is None
    _feed(theirs, batches)
    sb3_queue = iter(z)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):  # noqa: ANN001
        return self.copy_(mean + std * next(sb3_queue))

    with monkeypatch.context() as m:
        m.setattr(torch.Tensor, "normal_", normal_)
        theirs.train(gradient_steps=STEPS, batch_size=c.batch_size)
    assert next(sb3_queue, None) is None

    assert [("actor_loss" in s) for s in stats] == [False, True, False, True]
    assert np.mean([s["critic_loss"] for s in stats]) == pytest.approx(_logged(theirs, "critic_loss"), rel=1e-5)
    assert np.mean([s["actor_loss"] for s in stats if "actor_loss" in s]) == pytest.approx(
        _logged(theirs, "actor_loss"), rel=1e-5, abs=1e-6)
    min_change = 0.5 * 2 * c.lr  # the actor takes two steps
    for name in modules:
        _assert_params_close(getattr(ours, name), getattr(theirs, name), name, before[name],
                             min_change if name in ("actor", "critic") else 0.0)
