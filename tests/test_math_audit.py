"""Hand-checkable values for the algorithms' math: n-step windows cut by a time limit, a termination or the newest
data, prioritized replay's importance weights and beta annealing, discrete SAC's exact expectation over next actions,
TD3/DDPG's delayed actor and target updates, IQN's fractions, C51's projected target and QMIX's mixer (each number
is worked out in the comment beside it)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import canter
from canter.data import ReplayBatch
from canter.data.prioritized import PrioritizedReplayBuffer
from canter.data.replay import ReplayBuffer
from support import TINY


def _episode(buf: ReplayBuffer, rewards: list[float], end: str, first_obs: float = 0.0) -> None:
    """One env, one episode of ``len(rewards)`` steps with observation ``first_obs + t``; the last step
    ``end``s it ("terminated" or "truncated"); then the NEXT_STEP reset-only step (valid False)."""
    obs = np.array([[first_obs]], np.float32)
    for t, r in enumerate(rewards):
        last = t == len(rewards) - 1
        nxt = np.array([[first_obs + t + 1]], np.float32)
        buf.add(obs, np.zeros((1, 1), np.float32), np.array([r], np.float32), nxt,
                np.array([last and end == "terminated"]), np.array([True]), np.array([last and end == "truncated"]))
        obs = nxt
    reset = np.array([[100.0 + first_obs]], np.float32)
    buf.add(obs, np.zeros((1, 1), np.float32), np.zeros(1, np.float32), reset, np.array([False]), np.array([False]),
            np.array([False]))


@pytest.mark.parametrize("end", ["terminated", "truncated"])
def test_n_step_window_cut_inside_by_the_episodes_end(end):
    # gamma 0.5, n 3; episode rewards 1, 2 (obs 0, 1; final obs 2), then a 3-step episode (obs 10, 11, 12; final 13)
    buf = ReplayBuffer(100, (1,), (1,), gamma=0.5, n_step=3)
    _episode(buf, [1.0, 2.0], end)
    _episode(buf, [4.0, 8.0, 16.0], "terminated", first_obs=10.0)
    rows = {float(buf.obs[i, 0, 0]): i for i in range(buf.pos) if buf.valid[i, 0]}
    b = buf.transitions(np.array([rows[0.0], rows[1.0], rows[10.0], rows[11.0]]))
    # from obs 0: 1 + 0.5 * 2 over 2 rewards (cut at the end), next obs the final one (2), discount 0.25
    # from obs 1: 2, one reward; from obs 10: 4 + 0.5 * 8 + 0.25 * 16 = 12 over 3; from 11: 8 + 0.5 * 16 = 16 over 2
    assert b.rewards.tolist() == [2.0, 2.0, 12.0, 16.0]
    assert b.discounts.tolist() == [0.25, 0.5, 0.125, 0.25]
    assert b.next_obs[:, 0].tolist() == [2.0, 2.0, 13.0, 13.0]
    cut = 1.0 if end == "terminated" else 0.0  # a time limit bootstraps from the final observation
    assert b.terminated.tolist() == [cut, cut, 1.0, 1.0]


def test_n_step_window_cut_by_the_newest_data_bootstraps_from_the_head():
    # gamma 0.5, n 3; two steps of an unfinished episode: from obs 0 the sum has 2 rewards, next obs is the head's
    buf = ReplayBuffer(100, (1,), (1,), gamma=0.5, n_step=3)
    obs = np.zeros((1, 1), np.float32)
    for t, r in enumerate([1.0, 2.0]):
        nxt = np.array([[t + 1.0]], np.float32)
        buf.add(obs, np.zeros((1, 1), np.float32), np.array([r], np.float32), nxt, np.array([False]))
        obs = nxt
    b = buf.transitions(np.array([0]))
    assert (b.rewards.item(), b.discounts.item(), b.next_obs.item(), b.terminated.item()) == (2.0, 0.25, 2.0, 0.0)


def test_prioritized_weights_by_hand_and_beta_annealing():
    # alpha 1: priorities 1, 2, 4 (|td| + eps, eps 0) -> P = 1/7, 2/7, 4/7; w_i / max w = (P_i / P_min)^-beta
    buf = PrioritizedReplayBuffer(10, (1,), (1,), alpha=1.0, beta0=0.5, eps=0.0, seed=0)
    obs = np.zeros((1, 1), np.float32)
    for t in range(3):
        nxt = np.full((1, 1), t + 1.0, np.float32)
        buf.add(obs, np.zeros((1, 1), np.float32), np.zeros(1, np.float32), nxt, np.array([False]))
        obs = nxt
    buf.update_priorities(np.array([0, 1, 2]), np.array([1.0, -2.0, 4.0]))
    assert buf.max_priority == 4.0
    counts = np.bincount(buf.sample_indices(7000), minlength=3)
    np.testing.assert_allclose(counts / 7000, [1 / 7, 2 / 7, 4 / 7], atol=0.01)  # stratified: close to exact
    b = buf.sample(64)
    expected = {0: 1.0, 1: 2.0 ** -0.5, 2: 4.0 ** -0.5}  # beta 0.5 at step 0
    torch.testing.assert_close(b.weights, torch.tensor([expected[int(i)] for i in b.indices]))
    buf.set_progress(50, 100)
    assert buf.beta == pytest.approx(0.75)  # halfway from 0.5 to 1
    buf.set_progress(300, 100)
    assert buf.beta == 1.0
    b = buf.sample(64)
    torch.testing.assert_close(b.weights, torch.tensor([{0: 1.0, 1: 0.5, 2: 0.25}[int(i)] for i in b.indices]))
    # a new transition gets the largest priority so far (4): P = 4/11 and the smallest weight is still index 0's
    buf.add(obs, np.zeros((1, 1), np.float32), np.zeros(1, np.float32), obs + 1, np.array([False]))
    assert buf.sums.leaves[3] == 4.0 and buf.sums.total == 11.0


def test_discrete_sac_target_is_the_exact_expectation_over_next_actions():
    trainer = canter.make_trainer("sac_discrete", "CartPole-v1", gamma=0.9, **TINY)
    a = trainer.algorithm
    g = torch.Generator().manual_seed(0)
    n = 8
    batch = ReplayBatch(torch.randn(n, 4, generator=g), torch.randint(2, (n,), generator=g), torch.randn(n, generator=g),
                        torch.randn(n, 4, generator=g), (torch.arange(n) % 3 == 0).float(), torch.full((n,), 0.81),
                        torch.ones(n), torch.arange(n))
    alpha = torch.tensor(0.3)
    with torch.no_grad():
        pi = torch.softmax(a.model.action(batch.next_obs), -1)
        q_next = a.critic_target(a.model.encoder(batch.next_obs)).min(0).values  # [B, 2]
        # V(s') = sum_a pi(a|s') (min_i Q'_i(s', a) - alpha log pi(a|s')), both actions, nothing sampled
        v = pi[:, 0] * (q_next[:, 0] - 0.3 * pi[:, 0].log()) + pi[:, 1] * (q_next[:, 1] - 0.3 * pi[:, 1].log())
        y = batch.rewards + 0.81 * (1 - batch.terminated) * v
        q = a.model.value(batch.obs).gather(2, batch.actions.view(1, -1, 1).expand(2, -1, 1)).squeeze(2)
        loss, td = a.critic_loss(batch, alpha)
    torch.testing.assert_close(td, q - y)
    torch.testing.assert_close(loss, 0.5 * ((q - y) ** 2).mean(1).sum())
    assert a.ent_coef.target_entropy == pytest.approx(0.89 * math.log(2))  # the default: 0.89 of the maximum
    trainer.close()


@pytest.mark.parametrize("algo, delay", [("td3", 2), ("td3", 3), ("ddpg", 1)])
def test_delayed_actor_and_target_updates_count_critic_steps(algo, delay):
    trainer = canter.make_trainer(algo, "Pendulum-v1", policy_delay=delay, **TINY)
    a = trainer.algorithm
    g = torch.Generator().manual_seed(0)
    batch = ReplayBatch(torch.randn(16, 3, generator=g), torch.rand(16, 1, generator=g) * 2 - 1,
                        torch.randn(16, generator=g), torch.randn(16, 3, generator=g), torch.zeros(16),
                        torch.full((16,), 0.99), torch.ones(16), torch.arange(16))
    actor_steps = []
    for step in range(1, 7):
        before = [p.clone() for p in a.actor.parameters()]
        target_before = [p.clone() for p in a.actor_target.parameters()]
        stats = a.learn(batch)
        moved = any(not torch.equal(p, q) for p, q in zip(before, a.actor.parameters()))
        target_moved = any(not torch.equal(p, q) for p, q in zip(target_before, a.actor_target.parameters()))
        assert moved == target_moved == ("actor_loss" in stats)
        if moved:
            actor_steps.append(step)
    assert actor_steps == [s for s in range(1, 7) if s % delay == 0]
    trainer.close()


def test_iqn_draws_the_targets_fractions_apart_from_the_online_ones():
    trainer = canter.make_trainer("iqn", "CartPole-v1", n_quantiles=5, n_act_quantiles=3, **TINY)
    a = trainer.algorithm
    seen = []
    real = a.q.quantiles.__func__

    def spy(self, obs, taus):
        seen.append((self is a.q_target, taus.clone()))
        return real(self, obs, taus)

    a.q.quantiles = spy.__get__(a.q)
    a.q_target.quantiles = spy.__get__(a.q_target)
    g = torch.Generator().manual_seed(0)
    batch = ReplayBatch(torch.randn(4, 4, generator=g), torch.randint(2, (4,), generator=g), torch.randn(4, generator=g),
                        torch.randn(4, 4, generator=g), torch.zeros(4), torch.full((4,), 0.99), torch.ones(4),
                        torch.arange(4))
    a.td_loss(batch)
    (is_target, t_taus), (is_online, o_taus) = seen
    assert is_target and not is_online and t_taus.shape == o_taus.shape == (4, 5)  # N' = N = n_quantiles
    assert not torch.equal(t_taus, o_taus) and bool(((t_taus >= 0) & (t_taus < 1)).all())
    # acting: the K = 3 midpoints (k + 0.5) / K
    torch.testing.assert_close(a.q.act_taus, torch.tensor([1 / 6, 0.5, 5 / 6]))
    trainer.close()


def test_c51_target_by_hand_greedy_action_edges_terminal_and_n_step_discount():
    # support -1, 0, 1; next distributions: action 0 all on 1 (mean 1, greedy), action 1 all on -1
    trainer = canter.make_trainer("c51", "CartPole-v1", n_atoms=3, v_min=-1.0, v_max=1.0, net_arch=[8])
    algo = trainer.agent.algorithm
    nxt = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]).expand(4, 2, 3)
    obs = torch.zeros(4, 4)
    batch = ReplayBatch(obs, torch.zeros(4, dtype=torch.long), torch.tensor([0.5, 0.5, 3.0, -0.5]), obs,
                        torch.tensor([0.0, 1.0, 0.0, 0.0]), torch.tensor([0.25, 0.25, 0.81, 0.5]), torch.ones(4),
                        torch.arange(4))
    target = algo.td_target(batch, nxt)
    # 0.5 + 0.25 * 1 = 0.75: a quarter to atom 0, three quarters to atom 1; terminated: 0.5, halfway;
    # 3 + 0.81 beyond v_max: all on 1; -0.5 + 0.5 * 1 = 0 exactly on atom 0
    torch.testing.assert_close(target, torch.tensor([[0.0, 0.25, 0.75], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0],
                                                     [0.0, 1.0, 0.0]]))
    per_sample, priorities, _ = algo.td_loss(batch, nxt)
    logp = torch.log_softmax(algo.q.logits(obs), -1)[:, 0]  # the taken action 0's log-probabilities
    torch.testing.assert_close(per_sample, -(target * logp).sum(-1))  # cross-entropy, also the priority
    torch.testing.assert_close(priorities, per_sample.detach())
    trainer.close()


def test_qmix_mixer_by_hand_non_negative_hypernetwork_weights():
    pytest.importorskip("pettingzoo")
    from canter.algorithms.qmix import QMIX, QMIXConfig
    from canter.envs import make_vec_env

    env = make_vec_env("pettingzoo:tests.match_agents", 1, policies="joint", env_kwargs={"n_agents": 2})
    algo = QMIX(env.single_observation_space, env.single_action_space, QMIXConfig(mixing_embed_dim=3), seed=0)
    env.close()
    m = algo.q
    obs = torch.randn(5, 3, 9, generator=torch.Generator().manual_seed(0))  # width 6, then the alive masks of 3
    chosen = torch.randn(5, 2, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        s = obs[:, 2]
        w1 = m.hyper_w1(s).view(5, 2, 3).abs()  # |W1(s)| [agents, embed]
        hidden = torch.nn.functional.elu((chosen[:, :, None] * w1).sum(1) + m.hyper_b1(s))
        expected = (hidden * m.hyper_w2(s).abs()).sum(-1) + m.hyper_b2(s)[:, 0]  # |w2(s)| . hidden + V(s)
        torch.testing.assert_close(m.mix(chosen, obs), expected)
        assert bool((m.hyper_w1(s) < 0).any())  # the abs is what keeps the mixing monotonic
