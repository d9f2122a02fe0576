"""canter's ``recurrent_ppo`` against sb3-contrib's ``RecurrentPPO`` as a reference implementation.

The same LSTM actor-critic (sb3-contrib's ``MlpLstmPolicy`` with an LSTM each for actor and critic and
linear heads, ``net_arch=[]``; canter's ``lstm_actor_critic`` with ``critic_lstm`` and no hidden
layers) from the same weights, trained on the same rollout: observations, actions, old log-probs and
values (from stepping the network as acting does), advantages and returns, with episodes starting
inside the rollout and a non-zero memory at its start, Discrete (CartPole-v1) and Box (Pendulum-v1, a
Gaussian with a free ``log_std``) actions. Compared: every parameter's gradient after
the last minibatch, every parameter after the update and the logged losses.

Where the libraries differ by design the comparison is set up around it: sb3-contrib cuts its
flattened rollout at a random index (``split_index``) and starts a sequence there from the memory
stored while acting, without backpropagating through the cut; canter runs each env's whole rollout
from the memory at its start. With the cut at 0 (patched) and minibatches of whole env sequences,
both see the same sequences: an env's rollout, restarted with zero memory at each episode start.
SB3's minibatch order (env 0, then env 1) is given to canter's shuffle.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("sb3_contrib")
pytestmark = pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds them process-wide

from sb3_contrib import RecurrentPPO as SB3RecurrentPPO  # noqa: E402
from sb3_contrib.common.recurrent.type_aliases import RNNStates  # noqa: E402
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from canter.algorithms.recurrent_ppo import RecurrentPPO, RecurrentPPOConfig  # noqa: E402
from canter.data.batch import SequenceBatch  # noqa: E402

T, N, HIDDEN = 8, 2, 6
#: the steps whose observation starts an episode (memory zeroed before them), per env
STARTS = {0: [3], 1: [0, 5, 6]}


def _pairs(algo: RecurrentPPO, model) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """``(name, canter parameter, SB3 parameter)`` for every parameter of both networks."""
    m, p = algo.model, model.policy
    pairs = [(f"{tag}.{name}", a, dict(theirs.named_parameters())[name])
             for tag, ours, theirs in (("lstm_actor", m.lstm, p.lstm_actor), ("lstm_critic", m.critic_lstm, p.lstm_critic))
             for name, a in ours.named_parameters()]
    for tag, ours, theirs in (("actor", m.actor, p.action_net), ("critic", m.critic, p.value_net)):
        linear = [layer for layer in ours.modules() if isinstance(layer, torch.nn.Linear)]
        assert len(linear) == 1, f"{tag}: a linear head expected"
        pairs += [(f"{tag}.weight", linear[0].weight, theirs.weight), (f"{tag}.bias", linear[0].bias, theirs.bias)]
    if algo.continuous:
        pairs.append(("log_std", m.log_std, p.log_std))
    assert len(pairs) == len(list(m.parameters())) == len(list(p.parameters()))
    return pairs


def _pair(n_epochs: int, envs_per_minibatch: int, canter_steps: int = T, env_id: str = "CartPole-v1"):
    """canter's and sb3-contrib's recurrent PPO configured alike (canter's rollout ``canter_steps`` long),
    canter's weights copied into SB3's."""
    hp = dict(n_epochs=n_epochs, gamma=0.99, gae_lambda=0.95, clip_range=0.2,
              ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5, normalize_advantage=True)
    env = gym.make(env_id)
    torch.manual_seed(0)
    algo = RecurrentPPO(env.observation_space, env.action_space,
                        RecurrentPPOConfig(lr=3e-3, lstm_hidden=HIDDEN, net_arch=[], critic_lstm=True, n_steps=canter_steps,
                                           batch_size=envs_per_minibatch * canter_steps, **hp), seed=0)
    model = SB3RecurrentPPO("MlpLstmPolicy", DummyVecEnv([lambda: gym.make(env_id)] * N), device="cpu",
                            seed=0, learning_rate=3e-3,
                            policy_kwargs=dict(lstm_hidden_size=HIDDEN, net_arch=[], enable_critic_lstm=True,
                                               shared_lstm=False), n_steps=T, batch_size=envs_per_minibatch * T, **hp)
    model.set_logger(Logger(None, []))
    opt = model.policy.optimizer
    assert type(opt) is torch.optim.Adam and opt.defaults["eps"] == algo.config.adam_eps
    assert algo.config.clip_range_vf is None and model.clip_range_vf is None and model.target_kl is None
    pairs = _pairs(algo, model)
    with torch.no_grad():
        for name, ours, theirs in pairs:
            assert ours.shape == theirs.shape, name
            ours.add_(0.3 * torch.randn_like(ours))  # away from orthogonal/zero init: every bias matters
            theirs.copy_(ours)
    return algo, model, pairs


def _rollout(algo: RecurrentPPO, model) -> SequenceBatch:
    """A rollout stepped through canter's network (acting's log-probs and values), written into SB3's buffer
    with the memory before each step; advantages and returns are drawn (both buffers get the same)."""
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(T, N, algo.observation_space.shape[0], generator=g)
    actions = torch.randn(T, N, 1, generator=g) if algo.continuous else torch.randint(0, 2, (T, N), generator=g)
    starts = torch.zeros(T, N, dtype=torch.bool)
    for env, steps in STARTS.items():
        starts[steps, env] = True
    state0 = tuple(0.5 * torch.randn(1, N, 2 * HIDDEN, generator=g) for _ in range(2))
    state, log_probs, values = state0, torch.zeros(T, N), torch.zeros(T, N)
    buf = model.rollout_buffer
    buf.reset()
    with torch.no_grad():
        for t in range(T):
            (ha, hc), (ca, cc) = (s.split(HIDDEN, -1) for s in state)  # the memory before step t, not yet reset
            lstm_states = RNNStates((ha.clone(), ca.clone()), (hc.clone(), cc.clone()))
            keep = (~starts[t]).float().view(1, N, 1)
            out, v, state = algo.model.step(obs[t], (state[0] * keep, state[1] * keep))
            if algo.continuous:  # a diagonal Gaussian: the mean and the free log_std
                log_probs[t] = torch.distributions.Normal(out, algo.model.log_std.exp()).log_prob(actions[t]).sum(-1)
            else:
                log_probs[t] = torch.distributions.Categorical(logits=out).log_prob(actions[t])
            values[t] = v
            buf.add(obs[t].numpy(), actions[t].reshape(N, -1).numpy(), np.zeros(N, np.float32),
                    starts[t].float().numpy(), v.clone(), log_probs[t].clone(), lstm_states=lstm_states)
    assert buf.full
    advantages, returns = torch.randn(T, N, generator=g), values + torch.randn(T, N, generator=g)
    buf.advantages[:], buf.returns[:] = advantages.numpy(), returns.numpy()
    return SequenceBatch(obs, actions, log_probs, values, advantages, returns, torch.ones(T, N, dtype=torch.bool),
                         starts, state0)


def _with_autoreset_rows(b: SequenceBatch) -> SequenceBatch:
    """``b`` in gymnasium's NEXT_STEP layout: before each env's first episode start inside the rollout, a row
    that is no transition (``valid`` False: the previous episode's final observation, the action ignored),
    with advantages and returns that would dominate the loss and its normalisation were it not masked."""
    def insert(x: torch.Tensor, filler: torch.Tensor) -> torch.Tensor:
        cols = [torch.cat([x[:at, n], filler[None], x[at:, n]]) for n, at in ((n, STARTS[n][-1] if n else STARTS[0][0])
                                                                             for n in range(N))]
        return torch.stack(cols, 1)

    g = torch.Generator().manual_seed(2)
    return SequenceBatch(insert(b.obs, torch.randn(b.obs.shape[-1], generator=g)),
                         insert(b.actions, torch.ones(b.actions.shape[2:], dtype=b.actions.dtype)),
                         insert(b.log_probs, torch.tensor(-5.0)), insert(b.values, torch.tensor(3.0)),
                         insert(b.advantages, torch.tensor(1e3)), insert(b.returns, torch.tensor(1e3)),
                         insert(b.valid, torch.tensor(False)), insert(b.starts, torch.tensor(False)), b.state)


@pytest.mark.parametrize("n_epochs, envs_per_minibatch, autoreset_rows, env_id", [
    (1, N, False, "CartPole-v1"), (3, N, False, "CartPole-v1"), (2, 1, False, "CartPole-v1"),
    (2, N, True, "CartPole-v1"), (2, 1, True, "CartPole-v1"), (3, N, False, "Pendulum-v1"), (2, 1, True, "Pendulum-v1")])
def test_recurrent_ppo_update_matches_sb3_contrib(n_epochs, envs_per_minibatch, autoreset_rows, env_id, monkeypatch):
    """Epochs of minibatches of whole env sequences, from the same weights on the same rollout: every
    gradient (the last minibatch's), every parameter afterwards and the mean losses match sb3-contrib's.
    ``autoreset_rows``: canter's rollout has a NEXT_STEP row (not a transition) before an episode start in
    each env, one row longer than SB3's, which has none (its autoreset is same-step): masked out of the
    loss and the advantage normalisation, and forgotten at the start after it, it changes nothing."""
    algo, model, pairs = _pair(n_epochs, envs_per_minibatch, T + autoreset_rows, env_id)
    batch = _rollout(algo, model)
    if autoreset_rows:
        batch = _with_autoreset_rows(batch)
        assert batch.starts[1:][~batch.valid[:-1]].all() and (~batch.valid).sum() == N
    monkeypatch.setattr(np.random, "randint", lambda n: 0)  # sb3-contrib's split_index: no cut mid-sequence
    randperm = torch.randperm
    monkeypatch.setattr(torch, "randperm", lambda n, **kw: torch.arange(n))  # SB3's order: env 0, then env 1
    before = [ours.detach().clone() for _, ours, _ in pairs]
    stats = algo.learn(batch)
    monkeypatch.setattr(torch, "randperm", randperm)
    model.train()
    for name, ours, theirs in pairs:
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-6, msg=lambda m, n=name: f"grad {n}: {m}")
    for (name, ours, theirs), old in zip(pairs, before):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}")
    assert max(float((ours.detach() - old).abs().max()) for (_, ours, _), old in zip(pairs, before)) > 1e-3
    logged = model.logger.name_to_value
    assert stats["policy_loss"] == pytest.approx(logged["train/policy_gradient_loss"], rel=1e-4, abs=1e-6)
    assert stats["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-4)
    assert stats["entropy"] == pytest.approx(-logged["train/entropy_loss"], rel=1e-4)
    assert stats["clip_fraction"] == pytest.approx(logged["train/clip_fraction"], abs=1e-6)
