"""Discrete CQL's and TD3+BC's losses and gradients on one tiny batch through networks with weights set by hand,
against numbers worked out on paper (not the code's own formulas re-evaluated): the other offline tests compare
with the papers' equations written in torch, which a shared misreading would pass."""
from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from canter.algorithms.cql import CQLConfig, DiscreteCQL
from canter.algorithms.td3bc import TD3BC, TD3BCConfig
from canter.data.batch import ReplayBatch


def _set(mlp: torch.nn.Module, *layers: tuple[list[list[float]], list[float]]) -> None:
    """Give the linear layers of ``mlp`` the weights and biases ``layers``, in order."""
    linears = [m for m in mlp.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == len(layers)
    with torch.no_grad():
        for lin, (w, b) in zip(linears, layers):
            lin.weight.copy_(torch.tensor(w))
            lin.bias.copy_(torch.tensor(b))


def _grads_at_step(optimizer: torch.optim.Optimizer, params: list[torch.Tensor]) -> dict[str, list[torch.Tensor]]:
    """The gradients ``params`` hold when ``optimizer`` steps (filled in by the step)."""
    seen: dict[str, list[torch.Tensor]] = {}
    step = optimizer.step
    optimizer.step = lambda *a, **k: (seen.update(grads=[p.grad.clone() for p in params]), step(*a, **k))[1]
    return seen


def _cql(**hparams: object) -> DiscreteCQL:
    """CQL on Box(2) x Discrete(2): online ``Q(s) = relu(s) = s`` (s >= 0), target ``Q'(s) = (s_1, s_0)``."""
    config = CQLConfig(net_arch=[2], max_grad_norm=1e9, **hparams)
    algo = DiscreteCQL(gym.spaces.Box(0.0, 10.0, (2,)), gym.spaces.Discrete(2), config, seed=0)
    eye, swap = [[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]
    _set(algo.q, (eye, [0.0, 0.0]), (eye, [0.0, 0.0]))
    _set(algo.q_target, (eye, [0.0, 0.0]), (swap, [0.0, 0.0]))
    return algo


# s1 = (1, 2), a = 0, r = 1, s1' = (0, 3), not terminated; s2 = (2, 0), a = 1, r = 0, s2' = (1, 1), terminated
CQL_BATCH = ReplayBatch(
    obs=torch.tensor([[1.0, 2.0], [2.0, 0.0]]), actions=torch.tensor([0, 1]), rewards=torch.tensor([1.0, 0.0]),
    next_obs=torch.tensor([[0.0, 3.0], [1.0, 1.0]]), terminated=torch.tensor([0.0, 1.0]),
    discounts=torch.tensor([0.5, 0.5]), weights=torch.ones(2), indices=torch.arange(2))
# logsumexp(1, 2) - Q(s1, 0) = 1.3132617, logsumexp(2, 0) - Q(s2, 1) = 2.1269280: their mean
CQL_GAP = 1.7200948


@pytest.mark.parametrize("huber, double_q, td", [
    (True, False, 0.5),    # y1 = 1 + 0.5 * max(3, 0) = 2.5 against Q(s1, 0) = 1: Huber(1.5) = 1.0; y2 = 0 = Q(s2, 1): mean
    (False, False, 1.125),  # squared: 1.5^2 / 2
    (True, True, 0.0),     # Double DQN: the online net picks a' = 1 in s1', the target values it 0: y1 = 1 = Q(s1, 0)
])
def test_cql_loss_on_a_hand_computed_batch(huber, double_q, td):
    algo = _cql(cql_alpha=2.0, huber=huber, double_q=double_q)
    info = algo.learn(CQL_BATCH)
    assert info["td_loss"] == pytest.approx(td, abs=1e-6)
    assert info["cql_gap"] == pytest.approx(CQL_GAP, abs=1e-6)
    assert info["loss"] == pytest.approx(td + 2.0 * CQL_GAP, abs=1e-6)
    assert info["q_mean"] == pytest.approx(0.5, abs=1e-6)  # Q(s1, 0) = 1, Q(s2, 1) = 0


def test_cql_gradient_on_a_hand_computed_batch():
    """d loss / d Q(s_i, .) = TD part + (alpha / B) (softmax Q(s_i, .) - onehot(a_i)); the output layer's bias
    gradient is their sum over the batch, its weight gradient their outer product with the hidden layer (= s_i):
    s1: (-0.5 + 0.2689414 - 1, 0.7310586), s2: (0.8807971, 0.1192029 - 1)."""
    algo = _cql(cql_alpha=2.0)
    out = [m for m in algo.q.modules() if isinstance(m, torch.nn.Linear)][-1]
    seen = _grads_at_step(algo.optimizer, [out.weight, out.bias])
    algo.learn(CQL_BATCH)
    weight, bias = seen["grads"]
    torch.testing.assert_close(bias, torch.tensor([-0.3502615, -0.1497385]), rtol=0, atol=1e-6)
    torch.testing.assert_close(weight, torch.tensor([[0.5305356, -2.4621172], [-1.0305356, 1.4621172]]),
                               rtol=0, atol=1e-6)


def _td3bc() -> TD3BC:
    """TD3+BC on Box(1) x Box(1): actor ``mu(s) = tanh(relu(s))``, critics ``Q_1 = relu(a + 2)``, ``Q_2 = relu(2 - a)``."""
    box = gym.spaces.Box(-5.0, 5.0, (1,))
    algo = TD3BC(box, gym.spaces.Box(-1.0, 1.0, (1,)), TD3BCConfig(net_arch=[1]), seed=0)
    _set(algo.actor, ([[1.0]], [0.0]), ([[1.0]], [0.0]))
    _set(algo.critic.q[0], ([[0.0, 1.0]], [2.0]), ([[1.0]], [0.0]))
    _set(algo.critic.q[1], ([[0.0, -1.0]], [2.0]), ([[1.0]], [0.0]))
    return algo


def test_td3bc_actor_loss_and_gradient_on_a_hand_computed_batch():
    """s = (0.5, -1), data actions (0.2, -0.5): mu = (tanh 0.5, 0) = (0.4621172, 0), Q_1 = (2.4621172, 2) (Q_2, whose
    minimum would be 1.5378828, is not the paper's), lambda = 2.5 / 2.2310586 = 1.1205443, so
    ``-lambda mean Q_1 = -2.5`` and the BC term ``((0.2621172)^2 + 0.5^2) / 2 = 0.1593527``. The gradient on the
    actor's output bias: ``-lambda mean(dmu/db) + mean(2 (mu - a) dmu/db)``, ``dmu/db = (1 - tanh^2 0.5, 1)`` =
    ``-1.0008969 + 0.7061414``. Differentiating lambda too would give 0.7061414 (alpha mean Q / mean |Q| is constant
    for positive Q)."""
    algo = _td3bc()
    batch = ReplayBatch(obs=torch.tensor([[0.5], [-1.0]]), actions=torch.tensor([[0.2], [-0.5]]),
                        rewards=torch.zeros(2), next_obs=torch.zeros(2, 1), terminated=torch.zeros(2),
                        discounts=torch.full((2,), 0.99), weights=torch.ones(2), indices=torch.arange(2))
    loss = algo.policy_loss(batch)
    assert loss.item() == pytest.approx(-2.5 + 0.1593527, abs=1e-6)
    out = [m for m in algo.actor.modules() if isinstance(m, torch.nn.Linear)][-1]
    critic = list(algo.critic.parameters())
    grads = torch.autograd.grad(loss, [out.bias] + critic, allow_unused=True)
    assert grads[0].item() == pytest.approx(-1.0008969 + 0.7061414, abs=1e-6)
    assert all(g is None for g in grads[1:])  # the critics are not trained by the actor's loss
