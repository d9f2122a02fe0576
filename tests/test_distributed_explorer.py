"""The explorer without Ray: its rollout layout, weights over the wire, Ape-X epsilons and noisy nets, OU
noise resets, the imports an explorer actor's fresh process needs, and the seeds and random streams of
replaced and resumed explorers."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest
import torch

import canter
from canter.config import resolve_config
from canter.distributed.explorer import Explorer, apex_epsilon, explorer_weights, load_explorer_weights
from canter.envs import make_vec_env


def _agent(algo: str, seed: int = 0, **hp):
    run, cfg = resolve_config(algo, "CartPole-v1", hparams=hp, seed=seed, n_envs=2)
    env = make_vec_env(run.env, run.n_envs)
    return canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space), env


def test_explorer_rollout_layout_and_frozen_observation_statistics():
    agent, env = _agent("ppo", normalize_obs=True)
    before = agent.obs_rms.state_dict()["mean"].copy()
    explorer = Explorer(agent, env, seed=3)
    r = explorer.rollout(None, version=7, n_steps=300, bootstrap=True)
    T, N = 300, 2
    for key in ("obs", "rewards", "terminated", "dones", "valid", "log_probs", "values"):
        assert r[key].shape[:2] == (T, N), key
    assert r["obs"].shape == (T, N, 4) and r["actions"].dtype == np.int64
    assert r["last_obs"].shape == (N, 4) and r["last_values"].shape == (N,)
    assert r["version"] == 7 and r["steps"] == T * N and r["seconds"] > 0
    # every episode end is followed by an autoreset row (valid False), as in the VecEnv convention
    assert r["dones"].sum() == len(r["episode_returns"]) > 0
    assert not r["valid"][1:][r["dones"][:-1].astype(bool)].any() and r["valid"].mean() > 0.9
    assert r["episode_returns"].sum() == pytest.approx(r["rewards"][r["valid"]].sum() - _unfinished(r))
    np.testing.assert_array_equal(agent.obs_rms.state_dict()["mean"], before)  # explorers never update stats
    env.close()


def test_a_ray_explorer_imports_the_run_configs_imports(tmp_path, monkeypatch):
    """An explorer actor is a fresh process: it must import the run's ``imports`` before it looks up the
    env (and algorithm, model) names they register (it failed with 'unknown env id')."""
    from canter.distributed.explorer import ExplorerActor
    from canter.registry import _REGISTRY

    (tmp_path / "explorer_imports_mod.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        from canter.registry import register

        register("env", "ExplorerImportsCartPole-v0")(lambda **kw: gym.make("CartPole-v1", **kw))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    run, cfg = resolve_config("ppo", "ExplorerImportsCartPole-v0", sets=["imports=[explorer_imports_mod]"],
                              n_envs=2)
    # as in the explorer's own process: neither the module nor its registration
    monkeypatch.delitem(sys.modules, "explorer_imports_mod")
    monkeypatch.delitem(_REGISTRY["env"], "ExplorerImportsCartPole-v0")
    actor = ExplorerActor(0, 2, run, cfg)
    try:
        assert actor.rollout(None, 1, 8)["actions"].shape == (8, 2)
    finally:
        actor.explorer.close()


def test_ray_explorers_import_the_modules_a_script_imported_for_the_runs_names(tmp_path, monkeypatch):
    """A script imports a module that registers an env, then trains on it with Ray explorers: the explorer
    actors (fresh processes) did not import that module ('unknown env id' in every explorer); they now get
    it in their run config's imports, as a checkpoint records it for loading."""
    import canter.distributed.pool as pool_module
    from canter.distributed.explorer import ExplorerActor
    from canter.registry import _REGISTRY

    (tmp_path / "script_imported_envs.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        from canter.registry import register

        register("env", "ScriptImportedCartPole-v0")(lambda **kw: gym.make("CartPole-v1", **kw))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("script_imported_envs")
    built = {}

    class CapturedPool:  # stands in for the Ray pool: what the explorer actors would be built with
        def __init__(self, run, algo_cfg, count, address=None, **kw):
            built.update(run=run, algo_cfg=algo_cfg)
            raise KeyboardInterrupt

    monkeypatch.setattr(pool_module, "RayPool", CapturedPool)
    with pytest.raises(KeyboardInterrupt):
        canter.make_trainer("ppo", "ScriptImportedCartPole-v0", explorers=1, n_envs=2, n_steps=8)
    monkeypatch.delitem(sys.modules, "script_imported_envs")  # as in the explorer's own process
    monkeypatch.delitem(_REGISTRY["env"], "ScriptImportedCartPole-v0")
    actor = ExplorerActor(0, 1, built["run"], built["algo_cfg"])
    try:
        assert actor.rollout(None, 1, 8)["actions"].shape == (8, 2)
    finally:
        actor.explorer.close()


def _unfinished(r: dict) -> float:
    """Reward of the episodes still running at the end of a rollout (they are not in episode_returns)."""
    total = 0.0
    for n in range(r["rewards"].shape[1]):
        ends = np.flatnonzero(r["dones"][:, n])
        start = ends[-1] + 1 if len(ends) else 0
        total += r["rewards"][start:, n][r["valid"][start:, n]].sum()
    return total


def test_explorer_weights_round_trip_and_skip_target_networks():
    learner, env = _agent("dqn", seed=1)
    copy, _ = _agent("dqn", seed=2)
    weights = explorer_weights(learner)
    assert set(weights["modules"]) == {"q"}  # no target network over the wire
    assert all(isinstance(v, np.ndarray) for v in weights["modules"]["q"].values())
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    assert not all(torch.equal(a, b) for a, b in zip(learner.algorithm.q.parameters(), copy.algorithm.q.parameters()))
    load_explorer_weights(copy, weights)
    for a, b in zip(learner.algorithm.q.parameters(), copy.algorithm.q.parameters()):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(copy.predict(obs), learner.predict(obs))
    env.close()


def test_apex_epsilons_and_dqn_explorers_get_their_own():
    eps = [apex_epsilon(i, 8) for i in range(8)]
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4 ** 8)
    assert all(a > b for a, b in zip(eps, eps[1:]))
    agent, env = _agent("dqn")
    Explorer(agent, env, index=3, count=4)
    assert agent.algorithm.epsilon == pytest.approx(0.4 ** (1 + 7))
    env.close()


def test_a_resumed_in_process_explorer_starts_fresh_episodes_from_the_new_seed():
    # a resume whose env state was not saved resets the env with a new seed; the in-process explorer's
    # envs must take it (they used to keep replaying the episodes seeded from run.seed)
    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, seed=3, max_steps=64, eval_episodes=1)
    pool = trainer.env
    built = pool.explorer.obs.copy()
    pool.reset(seed=3)  # the start of training: the envs were just reset with the run seed
    np.testing.assert_array_equal(pool.explorer.obs, built)
    pool.reset(seed=3 + 7_777_777)
    assert not np.allclose(pool.explorer.obs, built)
    fresh = make_vec_env("CartPole-v1", 2).reset(seed=3 + 7_777_777)
    np.testing.assert_array_equal(pool.explorer.obs, fresh)
    trainer.close()


def test_explorers_reset_ou_noise_at_episode_ends():
    run, cfg = resolve_config("td3", "Pendulum-v1", hparams={"action_noise": "ou"}, seed=0, n_envs=1)
    env = make_vec_env(run.env, 1)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    resets, reset = [], agent.algorithm.reset_noise
    agent.algorithm.reset_noise = lambda done: (resets.append(done.clone()), reset(done))[1]
    Explorer(agent, env, seed=0).rollout(None, version=1, n_steps=205)  # Pendulum ends (truncated) at 200
    env.close()
    # at the episode's end and again after the reset-only step (NEXT_STEP autoreset), whose ignored action advanced
    # the process: the new episode's first action has one increment from zero, as SB3's
    assert [r.tolist() for r in resets] == [[True], [True]]


def test_noisy_dqn_explorers_explore_with_their_own_noise_not_epsilon():
    learner, env = _agent("dqn", seed=1, noisy=True)
    explorer_agent, _ = _agent("dqn", seed=2, noisy=True)
    Explorer(explorer_agent, env, index=0, count=4)
    assert explorer_agent.algorithm.epsilon == 0.0  # Ape-X's 0.4 was set on top of the noise
    load_explorer_weights(explorer_agent, explorer_weights(learner))
    noise = [[b for n, b in a.algorithm.q.named_buffers() if "eps" in n] for a in (learner, explorer_agent)]
    assert noise[0] and not all(torch.equal(a, b) for a, b in zip(*noise))  # not the learner's sample
    env.close()


def test_a_replacement_explorers_envs_do_not_replay_the_evaluation_episodes(monkeypatch):
    """Slot 0's first replacement reset its envs with seed + 1_000_003: the seed of the run's first
    evaluation episode (seed + 1_000_003 + 7919 k), so it trained on exactly the episodes evaluated."""
    from canter.distributed.explorer import ExplorerActor

    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=2)
    evaluation_seeds = {run.seed + 1_000_003 + 7919 * k + j for k in range(1000) for j in range(8)}
    for generation in (1, 2):
        actor = ExplorerActor(0, 2, run, cfg, generation=generation)
        try:
            assert not {actor.explorer.seed + j for j in range(run.n_envs)} & evaluation_seeds
        finally:
            actor.explorer.close()


def test_a_resumed_runs_explorers_draw_new_action_streams_not_the_interrupted_runs():
    """A resumed Ray run builds its explorers from the run's config (the original seed), then resets their
    envs from a new seed; their random warm-up actions (``Explorer.rng``) and their agent's sampling
    generator kept the streams of the original seed, so they replayed the interrupted run's draws from
    its start (the same random actions, on new episodes)."""
    from canter.distributed.explorer import ExplorerActor

    run, cfg = resolve_config("dqn", "CartPole-v1", n_envs=2, seed=3)
    first, resumed, again = (ExplorerActor(1, 2, run, cfg) for _ in range(3))
    try:
        resumed.reset(3 + 7_777_777 + 4096)  # a resumed run's fresh episodes (Trainer.load_resume_state)
        again.reset(3)  # the start of training: the run's seed, nothing changes
        generators = [a.explorer.agent.algorithm.generator.get_state() for a in (first, resumed, again)]
        assert not torch.equal(generators[0], generators[1]) and torch.equal(generators[0], generators[2])
        actions = [a.rollout(None, 0, 32, random=True)["actions"] for a in (first, resumed, again)]
        assert not np.array_equal(actions[0], actions[1]) and np.array_equal(actions[0], actions[2])
    finally:
        for actor in (first, resumed, again):
            actor.explorer.close()
