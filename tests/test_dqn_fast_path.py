"""DQN's speed paths compute exactly what the plain ones do: hand-derived gradients vs autograd,
and a whole training phase's minibatches with one batched target pass vs one minibatch at a time."""
from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.dqn import DQN, DQNConfig
from canter.data.batch import ReplayBatch
from canter.models.q_network import QNetwork

SPACES = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))


def _batch(n: int, seed: int, weights: bool = False) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    return ReplayBatch(
        obs=torch.randn(n, 4, generator=g), actions=torch.randint(3, (n,), generator=g),
        rewards=torch.randn(n, generator=g) * 3, next_obs=torch.randn(n, 4, generator=g),
        terminated=(torch.rand(n, generator=g) < 0.2).float(), discounts=torch.full((n,), 0.99),
        weights=torch.rand(n, generator=g) + 0.5 if weights else torch.ones(n), indices=torch.arange(n),
    )


def _dqn(manual: bool, **kw) -> DQN:
    torch.manual_seed(0)  # model initialisation
    return DQN(*SPACES, DQNConfig(manual_backward=manual, net_arch=[16, 16], lr=1e-2, **kw), seed=0)


@pytest.mark.parametrize("activation,tanh_kernel", [("relu", None), ("tanh", "numpy"), ("tanh", "sigmoid")])
@pytest.mark.parametrize("width,batch", [(8, 10), (256, 64)])  # NumPy's products only; torch's for the middle layer
def test_manual_mlp_gradients_match_autograd(activation, tanh_kernel, width, batch, monkeypatch):
    from canter.models import activations

    # tanh's kernel forced for every size (canter.models.activations): NumPy's matches torch.tanh to
    # float32 rounding; 2 * sigmoid(2x) - 1 is off by up to 1.7e-7 per unit, and a weight gradient sums
    # such errors times d over the batch, so its tolerance is that bound: 2e-7 * max_j sum_b |d[b, j]|
    monkeypatch.setattr(activations, "_sigmoid_from", 0 if tanh_kernel == "sigmoid" else sys.maxsize)
    torch.manual_seed(1)
    net = QNetwork(*SPACES, net_arch=[width, width], activation=activation)
    assert net.manual_backward
    obs, d_q = torch.randn(batch, 4), torch.randn(batch, 3)
    rtol, atol = (1e-4, 2e-7 * float(d_q.abs().sum(0).max())) if tanh_kernel == "sigmoid" else (1e-5, 1e-6)
    (net.value(obs) * d_q).sum().backward()
    auto = [p.grad.clone() for p in net.parameters()]
    with torch.no_grad():
        q, cache = net.forward_cached(obs)  # NumPy arrays
        net.backward_cached(cache, d_q.numpy())
    assert isinstance(q, np.ndarray)
    torch.testing.assert_close(torch.from_numpy(q), net.value(obs).detach())
    for a, m in zip(auto, net.parameters()):
        assert a.abs().sum() > 0
        torch.testing.assert_close(m.grad, a, rtol=rtol, atol=atol)


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("dead", [0.75, 1.0])
def test_manual_gradients_through_mostly_inactive_relu_units_match_autograd(depth, dead, monkeypatch):
    """With most units of the hidden layers after the first off for the whole batch (as in DQN's
    trained CartPole net), the backward pass multiplies only the active units: same gradients
    (zero rows for the inactive units), also when every unit is off."""
    import canter.models.mlp as mlp

    taken = []
    original = mlp._active_units
    monkeypatch.setattr(mlp, "_active_units", lambda on: taken.append(original(on)) or taken[-1])
    torch.manual_seed(2)
    net = QNetwork(*SPACES, net_arch=[256] * depth, activation="relu")
    linears = net.q._linears
    with torch.no_grad():  # switch off a fraction `dead` of the units of every hidden layer but the first
        for lin in linears[1:-1]:
            lin.bias[torch.randperm(lin.out_features)[:int(dead * lin.out_features)]] = -100.0
    obs, d_q = torch.randn(64, 4), torch.randn(64, 3)
    (net.value(obs) * d_q).sum().backward()
    auto = [p.grad.clone() for p in net.parameters()]
    with torch.no_grad():
        for p in net.parameters():
            p.grad.fill_(7.0)  # overwritten, not accumulated: rows of inactive units too
        _, cache = net.forward_cached(obs)
        net.backward_cached(cache, d_q.numpy())
    assert len(taken) == depth - 1 and all(units is not None for units in taken)  # the sparse path ran
    assert all(len(units) <= 0.3 * 256 for units in taken) and (dead < 1.0) == all(len(u) > 0 for u in taken)
    for a, m in zip(auto, net.parameters()):
        torch.testing.assert_close(m.grad, a, rtol=1e-5, atol=1e-6)
    inactive = np.setdiff1d(np.arange(256), taken[0])  # the first found, of linears[depth - 1]'s units
    assert (linears[depth - 1].weight.grad[inactive] == 0).all() and len(inactive) >= 0.7 * 256


@pytest.mark.parametrize("width", [8, 256])
def test_numpy_acting_equals_torch_acting(width):
    """DQN.act_numpy (the Agent's shortcut) returns what act returns, exploring or not, and draws
    the same random numbers."""
    a, b = (DQN(*SPACES, DQNConfig(net_arch=[width, width]), seed=3) for _ in range(2))
    b.q.load_state_dict(a.q.state_dict())
    obs = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
    module_q = a.q.q(torch.from_numpy(obs)).detach().numpy()  # nn.Module forward, with autograd
    np.testing.assert_allclose(b.q.value_numpy(obs), module_q, rtol=1e-5, atol=1e-5)
    for eps in (0.0, 0.5, 1.0):
        a.epsilon = b.epsilon = eps
        for deterministic in (True, False):
            with torch.inference_mode():
                expected = a.act(torch.from_numpy(obs), deterministic).actions.numpy()
            got = b.act_numpy(obs, deterministic).actions
            np.testing.assert_array_equal(got, expected)
    assert not (a.epsilon == 1.0 and (got == got[0]).all())  # eps 1: random actions really were drawn
    dueling = DQN(*SPACES, DQNConfig(net_arch=[8], dueling=True), seed=0)
    assert dueling.act_numpy(obs) is None  # no NumPy forward pass: the Agent uses act


@pytest.mark.parametrize("dueling", [False, True])  # NumPy acting path and torch acting path
def test_q_network_runs_only_when_some_env_acts_greedily(dueling, monkeypatch):
    """Exploring runs no forward pass when every env's coin says explore (SB3 skips it too),
    yet the actions are those of the eager version: same coins, same random actions, greedy elsewhere."""
    algo = DQN(*SPACES, DQNConfig(net_arch=[8, 8], dueling=dueling), seed=5)
    calls = []
    for name in ("value", "value_numpy"):
        original = getattr(algo.q, name)
        monkeypatch.setattr(algo.q, name, lambda obs, f=original: calls.append(len(obs)) or f(obs))
    obs = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    greedy = algo.q.q(torch.from_numpy(obs)).argmax(-1).numpy() if not dueling else None

    def act():
        calls.clear()
        out = algo.act_numpy(obs)
        if out is None:
            with torch.inference_mode():
                return algo.act(torch.from_numpy(obs)).actions.numpy()
        assert isinstance(out.actions, np.ndarray)
        return out.actions

    algo.epsilon = 1.0
    g = torch.Generator().manual_seed(5)
    for _ in range(5):
        actions = act()
        assert calls == []  # every coin below 1.0: no forward pass
        assert (torch.rand(4, generator=g) < 1.0).all()
        np.testing.assert_array_equal(actions, torch.randint(3, (4,), generator=g).numpy())
    algo.epsilon = 0.5
    mixed = 0
    for _ in range(40):
        actions = act()
        explore = torch.rand(4, generator=g).numpy() < 0.5
        if explore.all():
            assert calls == []
            np.testing.assert_array_equal(actions, torch.randint(3, (4,), generator=g).numpy())
            continue
        assert calls == [4]
        if explore.any():
            mixed += 1
            random_actions = torch.randint(3, (4,), generator=g).numpy()
            np.testing.assert_array_equal(actions[explore], random_actions[explore])
        if greedy is not None:
            np.testing.assert_array_equal(actions[~explore], greedy[~explore])
    assert mixed > 5


def test_dueling_and_learned_encoders_keep_autograd():
    assert not QNetwork(*SPACES, dueling=True).manual_backward
    assert not QNetwork(*SPACES, activation="elu").manual_backward
    assert not _dqn(True, n_quantiles=8).uses_manual_backward
    assert _dqn(True).uses_manual_backward and not _dqn(False).uses_manual_backward


@pytest.mark.parametrize("huber", [True, False])
@pytest.mark.parametrize("double_q", [False, True])
@pytest.mark.parametrize("weights", [False, True])
def test_manual_and_autograd_dqn_learn_the_same(huber, double_q, weights):
    def run(manual: bool):
        algo = _dqn(manual, huber=huber, double_q=double_q, max_grad_norm=0.5)  # small enough to clip
        stats = [algo.learn(_batch(32, seed=s, weights=weights)) for s in range(4)]
        return [p.detach().clone() for p in algo.q.parameters()], stats, algo.last_priorities

    (pa, sa, qa), (pb, sb, qb) = run(True), run(False)
    for a, b in zip(pa, pb):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(qa, qb, rtol=1e-4, atol=1e-5)
    for x, y in zip(sa, sb):
        assert x.keys() == y.keys()
        for k in x:
            assert x[k] == pytest.approx(y[k], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("manual", [True, False])
@pytest.mark.parametrize("n_quantiles", [0, 8])
@pytest.mark.parametrize("double_q", [True, False])
@pytest.mark.parametrize("weights", [False, True])
def test_learn_phase_equals_one_minibatch_at_a_time(manual, n_quantiles, double_q, weights):
    big = _batch(4 * 16, seed=5, weights=weights)
    a, b = (_dqn(manual, n_quantiles=n_quantiles, double_q=double_q, max_grad_norm=0.5) for _ in range(2))
    stats_phase = a.learn_phase(big, 4)
    stats_one = [b.learn(ReplayBatch(*(t[i * 16:(i + 1) * 16] for t in big))) for i in range(4)]
    assert len(stats_phase) == 4 and a.updates == b.updates == 4
    for x, y in zip(a.q.parameters(), b.q.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)
    for x, y in zip(stats_phase, stats_one):
        assert x == pytest.approx(y, rel=1e-5, abs=1e-6)


def test_trainer_batches_uniform_phases_and_not_prioritized_ones():
    import canter

    common = dict(seed=0, max_steps=600, eval_every=0, quiet=True)
    hp = dict(learning_starts=100, train_freq=100, gradient_steps=8, batch_size=16, net_arch=[16])
    uniform = canter.make_trainer("dqn", "CartPole-v1", hparams=hp, **common)
    calls = []
    learn_phase = uniform.agent.learn_phase
    uniform.agent.learn_phase = lambda batch, steps: calls.append((len(batch.obs), steps)) or learn_phase(batch, steps)
    records = list(uniform())
    assert calls and all(c == (128, 8) for c in calls)
    losses = [r.losses["loss"] for r in records if "loss" in r.losses]
    assert losses and np.isfinite(losses).all()
    per = canter.make_trainer("dqn", "CartPole-v1", hparams={**hp, "prioritized": True}, **common)
    per.agent.learn_phase = lambda *a: pytest.fail("a prioritized buffer must sample step by step")
    list(per())
    assert per.algorithm.updates > 0
    from canter.trainers.off_policy import PHASE_ROWS

    huge = dict(hp, batch_size=PHASE_ROWS // 4 + 1, buffer_size=PHASE_ROWS, learning_starts=500, train_freq=500)
    big = canter.make_trainer("dqn", "CartPole-v1", hparams={**huge, "gradient_steps": 4}, **common)
    big.agent.learn_phase = lambda *a: pytest.fail("a phase of more than PHASE_ROWS rows is drawn step by step")
    list(big())  # (10,000 x 128 rows at once took 3 GB)
    assert big.algorithm.updates > 0 and big.algorithm.updates % 4 == 0


def test_denormals_are_flushed_during_updates_only():
    """``flush_denormal`` speeds up the updates but must not leak into the caller's process."""
    import canter

    tiny = torch.tensor([1e-40])
    assert tiny.item() != 0.0  # denormals are representable before training
    seen = []
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=300, eval_every=0, quiet=True,
                                  hparams=dict(learning_starts=100, train_freq=100, gradient_steps=2, batch_size=8,
                                               net_arch=[8]))
    learn = trainer.agent.learn_phase
    trainer.agent.learn_phase = lambda *a: seen.append((tiny * 1.0).item()) or learn(*a)
    for _ in trainer():
        assert (tiny * 1.0).item() != 0.0  # between iterations: the process's own setting
    assert seen and all(v == 0.0 for v in seen)  # inside the updates: flushed
    assert (tiny * 1.0).item() != 0.0


def test_default_learn_phase_is_one_learn_per_minibatch():
    from canter.algorithms.td3 import TD3

    seen = []

    class Spy(TD3):
        def learn(self, batch):
            seen.append(batch.obs.clone())
            return {"n": float(len(batch.obs))}

    assert not TD3.phase_batching
    algo = Spy(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Box(-1, 1, (2,)), Spy.Config(net_arch=[8]), seed=0)
    big = _batch(12, seed=1)._replace(actions=torch.zeros(12, 2))
    assert algo.learn_phase(big, 3) == [{"n": 4.0}] * 3
    torch.testing.assert_close(torch.cat(seen), big.obs)


def test_manual_path_takes_actions_of_any_shape_and_dtype():
    """The NumPy path indexes with flat int64 actions: ``[B, 1]`` or float actions learn the same."""
    batch = _batch(16, seed=7)
    a, b = _dqn(True), _dqn(True)
    stats_a = a.learn(batch)
    stats_b = b.learn(batch._replace(actions=batch.actions.view(-1, 1).float()))
    assert stats_a == stats_b
    for x, y in zip(a.q.parameters(), b.q.parameters()):
        assert torch.equal(x, y)


def test_a_subclass_overriding_td_loss_gets_its_own_loss():
    """A user's DQN variant overriding ``td_loss`` (the documented per-sample loss) trained with the
    hand-derived gradients of DQN's own loss: the override was never called, silently."""
    calls = []

    class ZeroLossDQN(DQN):
        def td_loss(self, batch, next_target=None):
            calls.append(len(batch.obs))
            per_sample, priorities, q = super().td_loss(batch, next_target)
            return per_sample * 0.0, priorities, q

    torch.manual_seed(0)
    algo = ZeroLossDQN(*SPACES, DQNConfig(net_arch=[16, 16], lr=1e-2), seed=0)
    before = [p.detach().clone() for p in algo.q.parameters()]
    algo.learn(_batch(32, seed=1))
    algo.learn_phase(_batch(4 * 16, seed=2), 4)
    assert calls == [32, 16, 16, 16, 16]
    for a, b in zip(before, algo.q.parameters()):  # a zero loss: no gradient, Adam moves nothing
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert _dqn(True).uses_manual_backward  # canter's own DQN keeps the fast path


@pytest.mark.parametrize("manual", [True, False])
def test_a_subclass_overriding_learn_is_called_for_every_minibatch_of_a_phase(manual):
    """learn_phase (the trainer's path when gradient_steps > 1) stepped on the hand-derived path without
    calling a user's ``learn`` override, and on the autograd path passed it a second argument that the
    documented ``learn(batch)`` does not take (a TypeError)."""
    seen = []

    class MyDQN(DQN):
        def learn(self, batch):
            seen.append(len(batch.obs))
            return {**super().learn(batch), "extra": 1.0}

    torch.manual_seed(0)
    algo = MyDQN(*SPACES, DQNConfig(manual_backward=manual, net_arch=[16, 16], lr=1e-2), seed=0)
    stats = algo.learn_phase(_batch(4 * 16, seed=2), 4)
    assert seen == [16] * 4 and algo.updates == 4 and all(s["extra"] == 1.0 for s in stats)


def test_a_subclass_td_target_reading_the_online_network_learns_the_same_in_a_phase():
    """learn_phase computed a phase's TD targets once, before its gradient steps, unless double_q was set;
    a user's td_target that reads the online network (its own Double-DQN-like target) then got targets from
    stale weights for every minibatch after the first: parameters differed from one learn per minibatch."""

    class OnlinePicks(DQN):
        def td_target(self, batch, next_target=None):
            with torch.no_grad():
                nxt = self.target_values(batch.next_obs) if next_target is None else next_target
                best = self.q.value(batch.next_obs).argmax(1, keepdim=True)
                return batch.rewards + batch.discounts * (1 - batch.terminated) * nxt.gather(1, best).squeeze(1)

    def make() -> OnlinePicks:
        torch.manual_seed(0)
        return OnlinePicks(*SPACES, DQNConfig(net_arch=[16, 16], lr=1e-2, max_grad_norm=0.5), seed=0)

    big = _batch(4 * 16, seed=5)
    a, b = make(), make()
    assert a.uses_manual_backward
    a.learn_phase(big, 4)
    for i in range(4):
        b.learn(ReplayBatch(*(t[i * 16:(i + 1) * 16] for t in big)))
    for x, y in zip(a.q.parameters(), b.q.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_acting_chain_is_the_layer_by_layer_pass(activation):
    """Batches whose every product runs on NumPy (acting) take ``ChainNp``: bit for bit the layer-by-layer pass."""
    from canter.models.mlp import MLP

    torch.manual_seed(0)
    mlp = MLP([4, 256, 256, 2], activation)
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    mlp._arrays()
    assert mlp._np_chain.on_numpy(1) and mlp._np_chain.on_numpy(3) and not mlp._np_chain.on_numpy(64)
    for rows in (1, 3):
        np.testing.assert_array_equal(mlp.infer(x[:rows]), mlp._forward_manual(x[:rows].copy(), None))
    with torch.no_grad():
        mlp[0].weight.data = mlp[0].weight.data * 2.0  # new storage: the chain is rebuilt on it
    np.testing.assert_array_equal(mlp.infer(x[:1]), mlp._forward_manual(x[:1].copy(), None))
    with torch.no_grad():
        np.testing.assert_allclose(mlp.infer(x[:1]), mlp(torch.from_numpy(x[:1])).numpy(), rtol=1e-5, atol=1e-6)
