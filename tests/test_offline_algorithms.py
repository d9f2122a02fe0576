"""The offline algorithms: discrete CQL's and TD3+BC's losses and learning, and the offline trainer's
schedules and minibatch limits."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter
from canter.api import make_agent
from canter.config import resolve_config
from canter.data.dataset import collect
from canter.errors import CanterError
from support import assert_one_line_error, best_eval, run_cli


def test_cql_learns_from_random_data_what_the_data_never_did(tmp_path):
    """Uniform random CartPole play lasts ~22 steps; CQL's greedy policy on that data lasts far longer
    (behaviour cloning of it could only reproduce the random policy)."""
    data = collect("CartPole-v1", 20_000, None, seed=5)
    assert data.info["mean_return"] < 30
    data.save(tmp_path / "random")
    best, _ = best_eval("cql", dataset=str(tmp_path / "random"), seed=0, max_steps=6000, eval_every=1000,
                        target_reward=None)
    assert best >= 150


def test_cql_loss_is_td_plus_alpha_times_the_logsumexp_gap():
    """CQL(H): ``TD + alpha * mean(logsumexp_a Q(s, a) - Q(s, a_data))``, its value and its gradient."""
    data = collect("CartPole-v1", 256, None, seed=3)
    run, cfg = resolve_config("cql", "CartPole-v1", seed=0, hparams={"net_arch": [16], "cql_alpha": 2.5,
                                                                     "max_grad_norm": 1e9})
    algo = make_agent(run, cfg, data.observation_space, data.action_space).algorithm
    obs, next_obs = torch.from_numpy(data.obs[:64]), torch.from_numpy(data.next_obs[:64])
    acts = torch.from_numpy(data.actions[:64]).long()
    batch = canter.data.batch.ReplayBatch(obs, acts, torch.from_numpy(data.rewards[:64]).float(), next_obs,
                                          torch.from_numpy(data.terminated[:64]).float(), torch.full((64,), 0.99),
                                          torch.ones(64), torch.arange(64))
    params = list(algo.q.parameters())
    q_all = algo.q.value(obs)
    q = q_all.gather(1, acts.view(-1, 1)).squeeze(1)
    with torch.no_grad():
        target = batch.rewards + 0.99 * (1 - batch.terminated) * algo.q_target.value(next_obs).max(1).values
    td = torch.nn.functional.smooth_l1_loss(q, target)
    gap = (torch.logsumexp(q_all, 1) - q).mean()
    want = torch.autograd.grad(td + 2.5 * gap, params)
    seen = {}
    step = algo.optimizer.step
    algo.optimizer.step = lambda: (seen.update(grads=[p.grad.clone() for p in params]), step())
    info = algo.learn(batch)
    assert info["td_loss"] == pytest.approx(td.item(), rel=1e-5)
    assert info["cql_gap"] == pytest.approx(gap.item(), rel=1e-5) and info["cql_gap"] > 0
    assert info["loss"] == pytest.approx(td.item() + 2.5 * gap.item(), rel=1e-5)
    for got, expected in zip(seen["grads"], want):
        torch.testing.assert_close(got, expected)


def test_td3bc_normalises_observations_as_the_paper(tmp_path):
    """Fujimoto & Gu's normalize_states: ``(s - mean) / (std + 1e-3)`` over the dataset's states, unclipped;
    canter used SB3's ``sqrt(var + 1e-8)`` clipped to 10, over states and next states. A checkpoint
    without the setting (canter before 2026-11-26) keeps the normalisation it was trained with."""
    collect("Pendulum-v1", 50, None, seed=0).save(tmp_path / "data")
    trainer = canter.make_trainer("td3bc", dataset=str(tmp_path / "data"), max_steps=2, gradient_steps=2,
                                  net_arch=[8], eval_every=0, eval_episodes=1)
    list(trainer())
    obs = trainer.dataset.obs.astype(np.float64)
    agent = trainer.agent
    x = np.array([[1.0, 0.0, 8.0], [0.0, 0.0, 500.0]], np.float32)  # 500: beyond 10 std
    paper = (x - obs.mean(0)) / (obs.std(0) + 1e-3)
    assert agent.obs_rms.count == len(obs)
    np.testing.assert_allclose(agent.normalize_obs(x), paper, rtol=1e-5)
    batch = trainer.sample(4)._replace(obs=torch.from_numpy(x[[0, 1, 0, 1]]))
    np.testing.assert_allclose(agent.prepare_replay_batch(batch).obs.numpy(), paper[[0, 1, 0, 1]], rtol=1e-5)
    state = agent.state_dict()
    trainer.close()
    run, cfg = resolve_config("td3bc", "Pendulum-v1", hparams={"net_arch": [8]})
    loaded = make_agent(run, cfg, agent.observation_space, agent.action_space)
    loaded.load_state_dict(state)
    np.testing.assert_allclose(loaded.normalize_obs(x), paper, rtol=1e-5)
    old = make_agent(run, cfg, agent.observation_space, agent.action_space)
    old.load_state_dict({k: v for k, v in state.items() if k != "obs_std_eps"})
    np.testing.assert_allclose(old.normalize_obs(x), np.clip((x - agent.obs_rms.mean) / np.sqrt(agent.obs_rms.var
                                                                                                  + 1e-8), -10, 10),
                               rtol=1e-5)


def test_td3bc_policy_loss_is_the_papers():
    data = collect("Pendulum-v1", 512, None, seed=2)
    run, cfg = resolve_config("td3bc", "Pendulum-v1", seed=0, hparams={"net_arch": [32, 32]})
    agent = make_agent(run, cfg, data.observation_space, data.action_space)
    algo = agent.algorithm
    obs = torch.from_numpy(data.obs[:64])
    acts = torch.from_numpy(agent.from_env_actions(data.actions[:64]))
    batch = canter.data.batch.ReplayBatch(obs, acts, torch.zeros(64), obs, torch.zeros(64), torch.full((64,), 0.99),
                                          torch.ones(64), torch.arange(64))
    params = list(algo.actor.parameters())
    mu = algo.actor(obs)
    q = algo.critic.first(obs, mu)
    lam = cfg.alpha / q.abs().mean().detach()  # the paper's lambda is a constant of the step
    expected = -lam * q.mean() + ((mu - acts) ** 2).mean()
    loss = algo.policy_loss(batch)
    torch.testing.assert_close(loss, expected)
    critic = list(algo.critic.parameters())
    got = torch.autograd.grad(loss, params + critic, retain_graph=True, allow_unused=True)
    for g, want in zip(got, torch.autograd.grad(expected, params)):
        torch.testing.assert_close(g, want)
    assert all(g is None for g in got[len(params):])  # the critic is not trained by it
    with torch.no_grad():
        algo.config.alpha = 0.0  # pure behaviour cloning
        torch.testing.assert_close(algo.policy_loss(batch), ((mu - acts) ** 2).mean())
    assert algo.act(obs, deterministic=False).actions.equal(mu)  # an offline policy does not explore


def test_offline_schedules_follow_every_update(tmp_path):
    """Target syncs are counted in updates, also inside an iteration: 100 updates with an interval of 30
    sync at updates 30, 60 and 90."""
    collect("CartPole-v1", 300, None, seed=0).save(tmp_path / "data")
    _, trainer = best_eval("cql", dataset=str(tmp_path / "data"), max_steps=100, gradient_steps=100,
                           target_update_interval=30, net_arch=[16], eval_every=0, eval_episodes=1, target_reward=None)
    assert trainer.step == 100 and trainer.iteration_count == 1 and trainer.algorithm.target_syncs == 3


def test_an_offline_minibatch_too_large_for_memory_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    """batch_size=10**10 ended ``canter train td3bc --dataset`` with torch's RuntimeError and a traceback
    of C++ frames (the trainer's setup allocates a batch_size vector); one too large for a gradient
    step failed the same way in the update."""
    collect("Pendulum-v1", 50, None, seed=0).save(tmp_path / "data")
    code, _, err = run_cli(capsys, "train", "td3bc", "--dataset", str(tmp_path / "data"), "--max-steps", "4",
                           "--quiet", "--run-dir", str(tmp_path / "r"), "--set", "batch_size=10000000000")
    assert_one_line_error(code, err, "hparams.batch_size 10,000,000,000", "37.3 GiB")
    trainer = canter.make_trainer("td3bc", dataset=str(tmp_path / "data"), max_steps=4, gradient_steps=2,
                                  net_arch=[8], eval_every=0, eval_episodes=1)

    def learn(batch):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes.")

    monkeypatch.setattr(trainer.agent, "learn", learn)
    with pytest.raises(CanterError, match=r"batch_size 256 .*2\.0 GiB"):
        list(trainer())
    trainer.close()


@pytest.mark.slow
def test_td3bc_learns_pendulum_from_a_mixed_dataset(tmp_path):
    """A TD3 policy trained for 15k steps, acting randomly 30% of the time, collects the data."""
    agent = canter.train("td3", env="Pendulum-v1", seed=0, max_steps=15_000, run_dir=None)
    data = collect("Pendulum-v1", 20_000, agent, epsilon=0.3, seed=1)
    data.save(tmp_path / "mixed")
    best, _ = best_eval("td3bc", dataset=str(tmp_path / "mixed"), seed=0, max_steps=10_000, eval_every=2000)
    assert best >= -300


def test_td3bc_takes_the_encoder_setting_of_td3_bc_and_cql():
    """TD3+BC (TD3's models) had no 'encoder' hyperparameter, which TD3, BC and CQL have: '--set encoder=flat'
    was refused as an unknown config key, so an image dataset could not choose its encoder (impala, flat)."""
    import gymnasium as gym

    run, cfg = resolve_config("td3bc", "Pendulum-v1", encoder="flat")
    assert cfg.encoder == "flat"
    space = gym.spaces.Box(0, 255, (1, 8, 8), np.uint8)
    agent = make_agent(run, cfg, space, gym.spaces.Box(-1, 1, (1,), np.float32))
    for net in (agent.algorithm.actor, agent.algorithm.critic):  # auto would take ImpalaResNet for these images
        names = {type(m).__name__ for m in net.modules()}
        assert "FlatEncoder" in names and "ImpalaResNet" not in names


def test_offline_evaluations_come_after_exactly_eval_every_updates(tmp_path):
    """An offline iteration took all its gradient_steps before an evaluation could run, so eval_every 20 with
    40 updates an iteration evaluated at 40 and 60 only; an iteration now ends where an evaluation is due,
    and the updates (their minibatches) are those of a run without evaluations."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    kw = dict(dataset=str(tmp_path / "data"), max_steps=60, gradient_steps=40, eval_episodes=1, net_arch=[16])
    trainer = canter.make_trainer("bc", eval_every=20, **kw)
    with trainer:
        steps = [(r.step, r.evaluation is not None) for r in trainer()]
    assert steps == [(20, True), (40, True), (60, True)]
    plain = canter.make_trainer("bc", eval_every=0, **kw)
    with plain:
        assert [r.step for r in plain()] == [40, 60]
    for a, b in zip(trainer.algorithm.modules().values(), plain.algorithm.modules().values()):
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_offline_periodic_checkpoints_come_after_exactly_checkpoint_every_updates(tmp_path):
    """checkpoint_every 30 with 50 updates an iteration saved step-50 and step-100 (the first iteration end past
    each multiple); an iteration now ends where a periodic checkpoint is due, with the same updates."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    kw = dict(dataset=str(tmp_path / "data"), max_steps=100, gradient_steps=50, eval_every=0, eval_episodes=1,
              net_arch=[16], quiet=True)
    run = canter.make_trainer("bc", checkpoint_every=30, run_dir=tmp_path / "run", **kw)
    assert [r.step for r in run()] == [30, 60, 90, 100]
    run.close()
    saved = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("step-*.json"))
    assert saved == ["step-000000030.json", "step-000000060.json", "step-000000090.json"]
    plain = canter.make_trainer("bc", **kw)
    with plain:
        assert [r.step for r in plain()] == [50, 100]
    for a, b in zip(run.trainer.algorithm.modules().values(), plain.algorithm.modules().values()):
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_an_offline_run_started_from_a_saved_agent_keeps_its_observation_statistics(tmp_path):
    """init_from starts a run from a saved agent's networks and observation statistics, but the offline trainer
    replaced the statistics with the new dataset's at its start (found by the offline bug hunt: the networks then
    saw inputs normalised otherwise than they were trained on). They are kept now, through a resume too."""
    collect("CartPole-v1", 300, None, seed=0).save(tmp_path / "random")
    collect("CartPole-v1", 300, None, seed=1, env_kwargs={"max_episode_steps": 5}).save(tmp_path / "short")
    common = dict(normalize_obs=True, gradient_steps=10, eval_episodes=1, target_reward=None)
    source = canter.train("bc", dataset=tmp_path / "random", max_steps=10, run_dir=tmp_path / "a", **common)
    started = canter.train("bc", dataset=tmp_path / "short", max_steps=20, checkpoint_every=10,
                           run_dir=tmp_path / "b", init_from=str(tmp_path / "a"), **common)
    np.testing.assert_array_equal(started.obs_rms.mean, source.obs_rms.mean)
    run = canter.api.resume_trainer(tmp_path / "b", max_steps=30)
    for _ in run():
        pass
    run.close()
    np.testing.assert_array_equal(run.agent.obs_rms.var, source.obs_rms.var)


@pytest.mark.parametrize("algo, env_id", [("cql", "CartPole-v1"), ("td3bc", "Pendulum-v1")])
def test_offline_targets_bootstrap_through_truncations_not_terminations(tmp_path, algo, env_id):
    """Five hand-made transitions through the offline trainer's minibatch (dataset -> sample -> normalised batch):
    the targets are ``r + gamma * (1 - terminated) * next value``, so a truncated row (3) and the cut-off last row (4)
    bootstrap from their next observations, a terminated one (1) does not (checked by the offline bug hunt)."""
    import gymnasium as gym

    from canter.data.dataset import TransitionDataset

    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    obs = rng.uniform(-0.5, 0.5, (5, *env.observation_space.shape)).astype(np.float32)
    actions = np.array([0, 1, 1, 0, 1]) if algo == "cql" else np.linspace(-2, 2, 5, dtype=np.float32).reshape(5, 1)
    rewards = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    terminated, truncated = np.array([0, 1, 0, 0, 0], bool), np.array([0, 0, 0, 1, 0], bool)
    TransitionDataset(obs=obs, actions=actions, rewards=rewards, next_obs=obs + 0.1, terminated=terminated,
                      truncated=truncated, env_id=env_id, observation_space=env.observation_space,
                      action_space=env.action_space).save(tmp_path / "five")
    extra = {"target_policy_noise": 0.0} if algo == "td3bc" else {"normalize_obs": True}
    trainer = canter.make_trainer(algo, dataset=str(tmp_path / "five"), max_steps=1, gradient_steps=1, net_arch=[8],
                                  eval_every=0, eval_episodes=1, gamma=0.9, batch_size=5, **extra)
    trainer.setup()
    drawn = trainer.sample(5)
    idx = drawn.indices.numpy()
    batch = trainer.agent.prepare_replay_batch(drawn)
    algo_ = trainer.agent.algorithm
    with torch.no_grad():
        if algo == "cql":
            next_value = algo_.q_target.value(batch.next_obs).max(1).values
            got = algo_.td_target(batch)
        else:
            next_value = algo_.critic_target(batch.next_obs, algo_.actor_target(batch.next_obs)).min(0).values
            got = algo_.critic(batch.obs, batch.actions) - algo_.critic_loss(batch)[1]  # Q - (Q - target)
    not_done = torch.from_numpy(1.0 - terminated[idx].astype(np.float32))
    want = torch.from_numpy(rewards[idx]) + 0.9 * not_done * next_value
    torch.testing.assert_close(got, want.expand_as(got), rtol=1e-5, atol=1e-5)  # td3bc: each critic's
    assert {1, 3} <= set(idx.tolist())  # the terminated and the truncated row were drawn
    trainer.close()
