"""canter's on-policy algorithms against Stable-Baselines3 as a reference implementation.

Same weights, same data, one update in each library, then the numbers are compared:

* GAE advantages and returns (``canter.data.rollout``) against SB3's
  ``RolloutBuffer.compute_returns_and_advantage``, with terminations, and truncations laid out
  the way each library stores them (canter: NEXT_STEP autoreset rows, bootstrap through the
  final observation's value; SB3: ``gamma * V(terminal_obs)`` added to the truncated step's
  reward in ``collect_rollouts``).
* One PPO ``learn`` (three epochs; one minibatch holding the whole rollout, so that shuffling
  only changes summation order, or four minibatches with SB3's shuffle replaced by canter's)
  against ``PPO.train()``: the last gradients, the updated parameters and the logged statistics;
  Discrete and Box actions, with and without value clipping, hand-derived gradients (the
  default) and autograd.
* Two A2C ``learn`` calls against two ``A2C.train()`` (RMSprop), Discrete and Box.

canter's networks are copied into SB3's (actor/critic layer by layer, ``log_std``), the rollout
is built here (observations sampled from the env's space, actions from canter's policy, random
rewards and terminations) and written into both libraries' rollout buffers.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

sb3 = pytest.importorskip("stable_baselines3")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

from stable_baselines3.common.buffers import RolloutBuffer as SB3RolloutBuffer  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from canter.algorithms.a2c import A2C, A2CConfig  # noqa: E402
from canter.algorithms.ppo import PPO, PendingStats, PPOConfig  # noqa: E402
from canter.data.rollout import RolloutBuffer  # noqa: E402

GAMMA, LAM = 0.98, 0.8


# -- GAE ----------------------------------------------------------------------------------------
def _sb3_gae(rewards, values, episode_starts, last_values, last_dones, gamma=GAMMA, lam=LAM):
    """SB3's advantages and returns for ``[T, N]`` arrays."""
    T, N = rewards.shape
    buf = SB3RolloutBuffer(T, gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2), device="cpu",
                           gae_lambda=lam, gamma=gamma, n_envs=N)
    for t in range(T):
        buf.add(np.zeros((N, 1), np.float32), np.zeros(N), rewards[t], episode_starts[t],
                torch.as_tensor(values[t]), torch.zeros(N))
    buf.compute_returns_and_advantage(torch.as_tensor(last_values), last_dones)
    return buf.advantages, buf.returns


def _canter_gae(rewards, values, last_values, terminated, truncated, valid, gamma=GAMMA, lam=LAM):
    """canter's advantages and returns of the valid rows (flattened time-major) via ``RolloutBuffer.finish``."""
    T, N = rewards.shape
    buf = RolloutBuffer(T, N, (1,), ())
    for t in range(T):
        buf.add(np.zeros((N, 1), np.float32), torch.zeros(N), torch.zeros(N), torch.from_numpy(values[t]),
                rewards[t], terminated[t], truncated[t], valid[t])
    batch = buf.finish(torch.from_numpy(last_values), gamma, lam)
    return batch.advantages.numpy(), batch.returns.numpy()


def test_gae_with_terminations_matches_sb3():
    rng = np.random.default_rng(0)
    T, N = 16, 4
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    last_values = rng.normal(size=N).astype(np.float32)
    terminated = (rng.random((T, N)) < 0.15).astype(np.float32)
    terminated[-1, :2] = 1.0  # episodes that end on the rollout's last step
    assert 4 < terminated.sum() < T * N / 2
    # SB3 marks the step after an episode end as an episode start; its last row's flag is `dones`
    episode_starts = np.concatenate([np.zeros((1, N), np.float32), terminated[:-1]])
    adv_sb3, ret_sb3 = _sb3_gae(rewards, values, episode_starts, last_values, terminated[-1].astype(bool))
    valid = np.ones((T, N), bool)  # only the recursion's cut here; the NEXT_STEP layout: next test
    adv, ret = _canter_gae(rewards, values, last_values, terminated, np.zeros((T, N)), valid)
    np.testing.assert_allclose(adv, adv_sb3.reshape(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ret_sb3.reshape(-1), rtol=1e-5, atol=1e-5)


# Episode ends per env column in canter's NEXT_STEP layout: ``(row, kind)`` is an episode's last
# real step; the row after it is the autoreset-only row (valid False) holding V(final obs).
# Every column has two reset rows, so SB3's rollout (which has no such rows) is T - 2 long.
_ENDS = {
    0: [(3, "term"), (7, "trunc")],
    1: [(5, "term"), (11, "trunc")],   # + a reset row at row 0 (carried over from the last rollout);
                                       # truncated on the last row: bootstraps from last_values
    2: [(1, "trunc"), (10, "trunc")],  # the rollout ends on a reset row
    3: [(2, "trunc"), (4, "trunc"), (11, "term")],  # a one-step episode; terminated on the last row
}
_LEADING_RESET = {1}


def test_gae_with_truncation_matches_sb3_bootstrap():
    rng = np.random.default_rng(1)
    T, N = 12, len(_ENDS)
    terminated, truncated = np.zeros((T, N), np.float32), np.zeros((T, N), np.float32)
    valid = np.ones((T, N), bool)
    for n, ends in _ENDS.items():
        for row, kind in ends:
            (terminated if kind == "term" else truncated)[row, n] = 1.0
            if row + 1 < T:
                valid[row + 1, n] = False
        if n in _LEADING_RESET:
            valid[0, n] = False
    assert (valid.sum(0) == T - 2).all()
    values = rng.normal(size=(T, N)).astype(np.float32)
    values[~valid] += 5.0  # on a reset row: V(the final observation), large enough that bootstrapping shows
    rewards = np.where(valid, rng.normal(size=(T, N)), 0.0).astype(np.float32)
    last_values = rng.normal(size=N).astype(np.float32)  # V(obs after the last row)
    dones = np.maximum(terminated, truncated)

    # SB3's rollout of the same transitions: only real steps; a truncated step's reward gets
    # gamma * V(terminal_obs); the step after an episode end is an episode start
    Ts = T - 2
    r_sb3, v_sb3, start_sb3 = (np.zeros((Ts, N), np.float32) for _ in range(3))
    last_sb3, dones_sb3 = np.zeros(N, np.float32), np.zeros(N, bool)
    for n in range(N):
        rows = np.flatnonzero(valid[:, n])
        for j, t in enumerate(rows):
            next_value = values[t + 1, n] if t + 1 < T else last_values[n]
            r_sb3[j, n] = rewards[t, n] + (GAMMA * next_value if truncated[t, n] else 0.0)
            v_sb3[j, n] = values[t, n]
            start_sb3[j, n] = float(t == 0 or not valid[t - 1, n] or dones[t - 1, n])
        dones_sb3[n] = bool(dones[rows[-1], n])
        # after a done SB3 bootstraps from nothing (the value of the new episode's first obs is ignored)
        last_sb3[n] = last_values[n] if not dones_sb3[n] else rng.normal()
    adv_sb3, ret_sb3 = _sb3_gae(r_sb3, v_sb3, start_sb3, last_sb3, dones_sb3)

    adv, ret = _canter_gae(rewards, values, last_values, terminated, truncated, valid)
    # canter's batch holds the valid rows time-major; SB3's row of (t, n) counts the valid rows above it
    sb3_row = np.cumsum(valid, 0) - 1
    t_idx, n_idx = np.nonzero(valid)
    np.testing.assert_allclose(adv, adv_sb3[sb3_row[t_idx, n_idx], n_idx], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ret_sb3[sb3_row[t_idx, n_idx], n_idx], rtol=1e-5, atol=1e-5)


# -- shared pieces of the update tests ------------------------------------------------------------
def _canter_layers(model, grad=False):
    """Per group (actor, critic) the ``(weight [out, in], bias [out])`` views of canter's stacked
    MLP (of their gradients with ``grad``)."""
    body = model.body
    last = len(body.weights) - 1
    groups = []
    for g, n_out in enumerate(body.outs):
        layers = []
        for i, (w, b, transposed) in enumerate(zip(body.weights, body.biases, body.transposed)):
            w, b = (w.grad, b.grad) if grad else (w, b)
            weight, bias = (w[g] if transposed else w[g].T), b[g, 0]
            if i == last:  # output layers are padded to the widest group
                weight, bias = weight[:n_out], bias[:n_out]
            layers.append((weight, bias))
        groups.append(layers)
    return groups


def _sb3_layers(policy, grad=False):
    """The same for SB3's ``ActorCriticPolicy`` (default separate 64-64 pi and vf networks)."""
    ex = policy.mlp_extractor
    pick = (lambda m: (m.weight.grad, m.bias.grad)) if grad else (lambda m: (m.weight, m.bias))
    return [[pick(m) for m in (ex.policy_net[0], ex.policy_net[2], policy.action_net)],
            [pick(m) for m in (ex.value_net[0], ex.value_net[2], policy.value_net)]]


def _pairs(algo, model, grad=False):
    """(name, canter tensor, SB3 tensor) for every parameter (or its gradient)."""
    out = []
    for g, (ours, theirs) in enumerate(zip(_canter_layers(algo.model, grad), _sb3_layers(model.policy, grad))):
        for i, ((w, b), (w2, b2)) in enumerate(zip(ours, theirs)):
            out += [(f"{'pi' if g == 0 else 'vf'}{i}.weight", w, w2), (f"{'pi' if g == 0 else 'vf'}{i}.bias", b, b2)]
    if algo.continuous:
        log_std, log_std2 = algo.model.log_std, model.policy.log_std
        out.append(("log_std", log_std.grad if grad else log_std, log_std2.grad if grad else log_std2))
    return out


def _copy_weights(algo, model):
    """canter's weights into SB3's policy."""
    with torch.no_grad():
        for name, ours, theirs in _pairs(algo, model):
            assert ours.shape == theirs.shape, name
            theirs.copy_(ours)


def _params(algo, model):
    return [(name, ours.detach().clone(), theirs.detach().clone()) for name, ours, theirs in _pairs(algo, model)]


def _fill_rollouts(algo, model, env_id, n_steps, n_envs, seed, obs_scale=1.0):
    """A rollout with the same transitions in both libraries' buffers; returns canter's batch.

    Observations are sampled from the env's observation space (``obs_scale`` shrinks them towards
    0), actions from canter's policy, with values and log-probabilities from each library's own
    forward pass; rewards in [0.5, 1.5] (so the returns lie above the initial values), ~10%
    terminations. Every row is a real transition (no autoreset rows: the truncation layouts are
    covered by the GAE tests above)."""
    space = gym.make(env_id).observation_space
    space.seed(seed)
    rng = np.random.default_rng(seed)
    obs = np.stack([np.stack([space.sample() for _ in range(n_envs)]) for _ in range(n_steps + 1)])
    obs = (np.clip(obs, -5.0, 5.0) * obs_scale).astype(np.float32)  # CartPole's velocities are unbounded
    rewards = rng.uniform(0.5, 1.5, (n_steps, n_envs)).astype(np.float32)
    terminated = (rng.random((n_steps, n_envs)) < 0.1).astype(np.float32)

    act_shape = (int(np.prod(algo.action_space.shape)),) if algo.continuous else ()
    act_dtype = torch.float32 if algo.continuous else torch.int64
    ours, theirs = RolloutBuffer(n_steps, n_envs, obs.shape[2:], act_shape, act_dtype=act_dtype), model.rollout_buffer
    theirs.reset()
    no = np.zeros(n_envs)
    for t in range(n_steps):
        x = torch.from_numpy(obs[t])
        with torch.no_grad():
            act = algo.act(x)
            v_sb3, logp_sb3, _ = model.policy.evaluate_actions(x, act.actions)
        torch.testing.assert_close(v_sb3.flatten(), act.values, rtol=1e-5, atol=1e-5)  # the copied networks agree
        torch.testing.assert_close(logp_sb3, act.log_probs, rtol=1e-5, atol=1e-5)
        ours.add(x, act.actions, act.log_probs, act.values, rewards[t], terminated[t], no, np.ones(n_envs, bool))
        starts = terminated[t - 1] if t > 0 else np.zeros(n_envs, np.float32)
        theirs.add(obs[t], act.actions.numpy(), rewards[t], starts, v_sb3.flatten(), logp_sb3)
    last = torch.from_numpy(obs[n_steps])
    with torch.no_grad():
        batch = ours.finish(algo.value(last), algo.config.gamma, algo.config.gae_lambda)
        theirs.compute_returns_and_advantage(model.policy.predict_values(last), terminated[-1].astype(bool))
    np.testing.assert_allclose(batch.advantages.numpy(), theirs.advantages.reshape(-1), rtol=1e-5, atol=1e-5)
    return batch


def _sb3_model(cls, env_id, n_envs, **kw):
    env = DummyVecEnv([lambda: gym.make(env_id)] * n_envs)
    model = cls("MlpPolicy", env, device="cpu", seed=0, **kw)
    model.set_logger(Logger(None, []))
    return model


def _assert_same_grads(algo, model):
    """The gradients both libraries left behind (the last minibatch's, after norm clipping) match:
    unlike the parameters after a first Adam/RMSprop step (about lr * sign(g)), they show every
    coefficient of the loss."""
    for name, ours, theirs in _pairs(algo, model, grad=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-7, msg=lambda m, name=name: f"grad {name}: {m}")


def _assert_same_params(before, after, atol):
    """Every parameter matches SB3's; and the update moved the parameters well beyond the tolerance."""
    moved = 0.0
    for (name, ours0, _), (_, ours, theirs) in zip(before, after):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=atol, msg=lambda m, name=name: f"{name}: {m}")
        moved = max(moved, float((ours - ours0).abs().max()))
    assert moved > 100 * atol, moved


ENVS = ["CartPole-v1", "Pendulum-v1"]  # Discrete and Box actions


# -- PPO ------------------------------------------------------------------------------------------
def _same_minibatches(monkeypatch, algo, n_steps, n_envs):
    """Make SB3's ``RolloutBuffer.get`` draw the rows canter's next ``learn`` will, in the same order.

    canter shuffles with ``torch.randperm(n, generator=algo.generator)`` per epoch over rows
    flattened time-major (``t * n_envs + env``); SB3 with ``np.random.permutation`` per epoch over
    rows flattened env-major (``env * n_steps + t``). SB3's permutation is replaced by canter's,
    reproduced from a copy of its generator, in SB3's row numbering."""
    gen = torch.Generator()
    gen.set_state(algo.generator.get_state())
    t, env = np.divmod(np.arange(n_steps * n_envs), n_envs)
    sb3_row = env * n_steps + t

    def permutation(n):
        assert n == n_steps * n_envs
        return sb3_row[torch.randperm(n, generator=gen).numpy()]

    monkeypatch.setattr(np.random, "permutation", permutation)


@pytest.mark.parametrize("env_id", ENVS)
@pytest.mark.parametrize("clip_vf, n_minibatches", [(None, 1), (0.2, 1), (None, 4)],
                         ids=["no_vf_clip", "vf_clip", "4_minibatches"])
@pytest.mark.parametrize("manual", [True, False], ids=["manual", "autograd"])
def test_ppo_update_matches_sb3(env_id, clip_vf, n_minibatches, manual, monkeypatch):
    n_steps, n_envs, n_epochs = 32, 4, 3
    n = n_steps * n_envs
    hp = dict(n_steps=n_steps, batch_size=n // n_minibatches, n_epochs=n_epochs, gamma=GAMMA, gae_lambda=LAM,
              clip_range=0.2, clip_range_vf=clip_vf, normalize_advantage=True, ent_coef=0.01, vf_coef=0.5,
              max_grad_norm=0.5)
    lr = 1e-2  # large enough that epochs 2 and 3 clip some ratios
    env = gym.make(env_id)
    torch.manual_seed(0)
    algo = PPO(env.observation_space, env.action_space, PPOConfig(lr=lr, manual_backward=manual, **hp), seed=0)
    assert algo.model.manual_backward and algo.config.adam_eps == 1e-5  # SB3's PPO: Adam, eps 1e-5
    model = _sb3_model(sb3.PPO, env_id, n_envs, learning_rate=lr, **hp)
    assert model.policy.optimizer.defaults["eps"] == 1e-5
    _copy_weights(algo, model)
    # Value clipping differs by design: canter's loss is max((V - R)^2, (V_clip - R)^2) (OpenAI
    # baselines / CleanRL, docs/algorithms/ppo.md), SB3's is (V_clip - R)^2 alone. The two agree
    # (value and gradient) on every row where clipping is off (V_clip = V) or where the clipped
    # term is the larger one; they differ only where the critic's update moved V beyond the clip
    # range and closer to R than V_clip is (typically: away from R). With observations close
    # together (obs_scale) the update moves every value the same way, towards the returns, which
    # all lie above the initial values; `moves` below checks that no row falls in the difference.
    batch = _fill_rollouts(algo, model, env_id, n_steps, n_envs, seed=1, obs_scale=1.0 if clip_vf is None else 0.03)
    before = _params(algo, model)
    if n_minibatches > 1:  # with one minibatch the order of its rows changes only summation order
        _same_minibatches(monkeypatch, algo, n_steps, n_envs)

    rows = []  # canter's statistics row of each minibatch
    moves = []  # value clipping: (fraction of rows clipped, rows where canter's and SB3's value losses differ)
    grads = algo._grads_manual if manual else algo._grads_autograd

    def recording(mb, **kwargs):  # the hand-derived pass may leave its statistics to learn (defer=True)
        if clip_vf is not None:
            with torch.no_grad():
                v, v_old, ret = algo.model.value(mb.obs).numpy(), mb.values.numpy(), mb.returns.numpy()
            clipped = np.abs(v - v_old) > clip_vf
            v_clip = v_old + np.clip(v - v_old, -clip_vf, clip_vf)
            moves.append((clipped.mean(), int((clipped & ((v - ret) ** 2 > (v_clip - ret) ** 2)).sum())))
        out = grads(mb, **kwargs)
        rows.append(out.row(algo._stat_signs) if isinstance(out, PendingStats) else out)
        return out

    setattr(algo, grads.__name__, recording)
    stats = algo.learn(batch)
    model.train()
    logged = model.logger.name_to_value

    _assert_same_grads(algo, model)
    _assert_same_params(before, _params(algo, model), atol=5e-6)
    assert len(rows) == n_epochs * n_minibatches
    if clip_vf is not None:
        assert any(0.1 < m[0] < 0.9 for m in moves)  # value clipping acted on part of a minibatch
        assert sum(m[1] for m in moves) == 0  # and on no row where canter's and SB3's value losses differ
    else:
        assert 0.0 < stats["clip_fraction"] < 0.5  # the ratio clip acted
    # SB3 logs means over all minibatch updates, except approx_kl: the mean over the last epoch's
    # minibatches; canter logs every statistic as a mean over all of them
    assert stats["policy_loss"] == pytest.approx(logged["train/policy_gradient_loss"], rel=1e-4, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-4, abs=1e-6)
    assert stats["entropy"] == pytest.approx(-logged["train/entropy_loss"], rel=1e-5, abs=1e-6)
    assert stats["clip_fraction"] == pytest.approx(logged["train/clip_fraction"], abs=1e-6)
    last_epoch_kl = np.mean([r[3] for r in rows[-n_minibatches:]])
    assert last_epoch_kl == pytest.approx(logged["train/approx_kl"], rel=1e-3, abs=1e-7)
    assert logged["train/approx_kl"] > 1e-5
    assert stats["approx_kl"] == pytest.approx(np.mean([r[3] for r in rows]), rel=1e-5)
    assert stats["explained_variance"] == pytest.approx(logged["train/explained_variance"], rel=1e-4, abs=1e-5)
    assert stats["clip_range"] == logged["train/clip_range"] == 0.2


# -- A2C ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS)
@pytest.mark.parametrize("manual", [True, False], ids=["manual", "autograd"])
def test_a2c_update_matches_sb3(env_id, manual):
    n_steps, n_envs = 8, 4
    lr = 7e-4
    env = gym.make(env_id)
    torch.manual_seed(0)
    cfg = A2CConfig(lr=lr, n_steps=n_steps, gamma=GAMMA, gae_lambda=LAM, ent_coef=0.01, vf_coef=0.5,
                    max_grad_norm=0.5, manual_backward=manual)
    # canter's defaults are SB3's: RMSprop(alpha 0.99, eps 1e-5), no advantage normalisation
    assert (cfg.optimizer, cfg.rms_alpha, cfg.optimizer_eps, cfg.normalize_advantage) == ("rmsprop", 0.99, 1e-5, False)
    algo = A2C(env.observation_space, env.action_space, cfg, seed=0)
    model = _sb3_model(sb3.A2C, env_id, n_envs, learning_rate=lr, n_steps=n_steps, gamma=GAMMA, gae_lambda=LAM,
                       ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)
    opt = model.policy.optimizer
    assert isinstance(opt, torch.optim.RMSprop) and (opt.defaults["alpha"], opt.defaults["eps"]) == (0.99, 1e-5)
    assert not model.normalize_advantage
    _copy_weights(algo, model)
    before = _params(algo, model)

    # two consecutive updates on fresh rollouts: RMSprop's first step is about 10 * lr * sign(g)
    # whatever the gradient's scale; the second one depends on the ratio of the two gradients
    for seed in (2, 3):
        batch = _fill_rollouts(algo, model, env_id, n_steps, n_envs, seed=seed)
        stats = algo.learn(batch)
        model.train()
        logged = model.logger.name_to_value
        _assert_same_grads(algo, model)
        assert stats["grad_norm"] > 0.5  # the gradient-norm clip acted
        assert stats["policy_loss"] == pytest.approx(logged["train/policy_loss"], rel=1e-4, abs=1e-6)
        assert stats["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-4, abs=1e-6)
        assert stats["entropy"] == pytest.approx(-logged["train/entropy_loss"], rel=1e-5, abs=1e-6)
        assert stats["explained_variance"] == pytest.approx(logged["train/explained_variance"], rel=1e-4, abs=1e-5)
    _assert_same_params(before, _params(algo, model), atol=5e-6)


@pytest.mark.parametrize("env_id", ENVS)
@pytest.mark.parametrize("manual", [True, False], ids=["manual", "autograd"])
def test_ppo_target_kl_early_stop_matches_sb3(env_id, manual, monkeypatch):
    """``target_kl``: both libraries compute each minibatch's ``mean((r - 1) - log r)`` before its
    step and, above 1.5 * target_kl, skip that step and every later epoch; the same minibatches
    give the same parameters, the same number of steps and the same logged statistics."""
    n_steps, n_envs, n_epochs, n_minibatches = 32, 4, 5, 4
    n = n_steps * n_envs
    hp = dict(n_steps=n_steps, batch_size=n // n_minibatches, n_epochs=n_epochs, gamma=GAMMA, gae_lambda=LAM,
              clip_range=0.2, normalize_advantage=True, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
              target_kl=0.002)
    lr = 1e-2
    env = gym.make(env_id)
    torch.manual_seed(0)
    algo = PPO(env.observation_space, env.action_space, PPOConfig(lr=lr, manual_backward=manual, **hp), seed=0)
    model = _sb3_model(sb3.PPO, env_id, n_envs, learning_rate=lr, **hp)
    _copy_weights(algo, model)
    batch = _fill_rollouts(algo, model, env_id, n_steps, n_envs, seed=1)
    before = _params(algo, model)
    _same_minibatches(monkeypatch, algo, n_steps, n_envs)
    steps = []
    step = algo.optimizer.step

    def counting_step():
        steps.append(1)
        return step()

    algo.optimizer.step = counting_step
    stats = algo.learn(batch)
    model.train()
    logged = model.logger.name_to_value
    # stopped early: after at least one step, before all of them (SB3 counts the started epochs)
    assert 0 < len(steps) < n_epochs * n_minibatches
    assert logged["train/n_updates"] == len(steps) // n_minibatches + 1
    _assert_same_params(before, _params(algo, model), atol=5e-6)
    assert stats["policy_loss"] == pytest.approx(logged["train/policy_gradient_loss"], rel=1e-4, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-4, abs=1e-6)
