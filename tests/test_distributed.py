"""Learner/Explorer pieces that run without Ray: the in-process explorer, weights, Ape-X epsilons,
IMPALA/APPO in one process, the missing-extra error, and no Ray import on the default path."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import canter
from canter.cli import main
from canter.config import resolve_config
from canter.distributed.explorer import Explorer, apex_epsilon, explorer_weights, load_explorer_weights
from canter.envs import make_vec_env
from canter.errors import CanterWarning


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


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_async_algorithms_learn_cartpole_in_one_process(algo):
    trainer = canter.make_trainer(algo, "CartPole-v1", seed=1, max_steps=40_000, eval_every=5000)
    records = list(trainer())
    trainer.close()
    assert trainer.best_eval_return >= 300, f"{algo} reached only {trainer.best_eval_return}"
    # the in-process explorer acts with the learner's own networks: on-policy, pi/mu = 1
    assert all(r.losses["rho_clip_fraction"] == 0.0 for r in records)
    assert "policy_lag" not in records[-1].losses  # no explorer statistics without explorers


def test_an_in_process_explorers_multiagent_episodes_name_their_agent():
    """history.parquet's ``agent`` column (docs/multiagent.md) for IMPALA / APPO, whose episodes come
    from an explorer pool: it was missing."""
    pytest.importorskip("pettingzoo")
    trainer = canter.make_trainer("impala", "pettingzoo:tests.match_agents", env_kwargs={"n_agents": 3,
                                  "miss_leaves": True}, seed=0, n_envs=2, max_steps=1024, eval_every=0, eval_episodes=1)
    episodes = [e for r in trainer() for e in r.episodes]
    trainer.close()
    agents = [e.agent for e in episodes]
    assert len(episodes) > 30 and set(agents) == {"agent_0", "agent_1", "agent_2"}
    # an agent that misses leaves: each copy's episode ends every agent once, so the counts stay level
    assert max(agents.count(a) for a in set(agents)) - min(agents.count(a) for a in set(agents)) <= 2


@pytest.mark.parametrize("algo", ["impala", "appo", "ppo", "dqn"])
def test_observation_statistics_skip_the_rows_of_agents_that_left_in_an_explorers_env(algo, monkeypatch):
    """The learner folded every row of an explorer's trajectory into the observation statistics, a departed
    agent's repeated final observation included (256 rows where 224 were observations). PPO's synchronous
    and DQN's Ape-X learners (--explorers) are driven by the in-process pool here."""
    pytest.importorskip("pettingzoo")
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer, SyncTrainer

    valid = []
    rollout = Explorer.rollout

    def recorded(self, *args, **kwargs):
        out = rollout(self, *args, **kwargs)
        valid.extend(out["valid"])
        return out

    monkeypatch.setattr(Explorer, "rollout", recorded)
    kwargs = {"n_agents": 2, "miss_leaves": True}
    if algo in ("impala", "appo"):
        trainer = canter.make_trainer(algo, "pettingzoo:tests.match_agents", env_kwargs=kwargs, seed=0, n_envs=1,
                                      max_steps=256, normalize_obs=True, eval_every=0, eval_episodes=1)
    else:
        hp = {"n_steps": 16, "batch_size": 16} if algo == "ppo" else {"learning_starts": 64, "batch_size": 8}
        run, cfg = resolve_config(algo, "pettingzoo:tests.match_agents", hparams={**hp, "normalize_obs": True},
                                  n_envs=1, max_steps=256, eval_every=0, env_kwargs=kwargs)
        env = make_vec_env(run.env, run.n_envs, env_kwargs=kwargs)
        agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
        driver = SyncTrainer if algo == "ppo" else ApeXTrainer
        trainer = driver(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    list(trainer())
    trainer.close()
    # one copy: after a step, the rows of the agents that took part in it hold observations (a final one
    # included), and every row where none did (the step reset the copy)
    real = 2 + sum(2 if not v.any() else int(v.sum()) for v in valid[:-1])
    assert real < 2 * len(valid)  # agents left early
    assert trainer.agent.obs_rms.count == pytest.approx(real)


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_reward_normalisation_tracks_one_return_per_agent_of_an_in_process_explorer(algo):
    """The learner's Agent was sized for n_envs copies (2), not their 4 agents' rows: a broadcast error."""
    pytest.importorskip("pettingzoo")
    trainer = canter.make_trainer(algo, "pettingzoo:tests.match_agents", seed=0, n_envs=2, max_steps=512,
                                  normalize_reward=True, eval_every=0, eval_episodes=1)
    records = list(trainer())
    trainer.close()
    assert records[-1].step >= 512 and trainer.agent._returns.shape == (4,)


@pytest.mark.parametrize("algo", ["ppo", "impala"])
def test_max_policy_lag_without_async_explorers_warns_that_it_is_ignored(algo):
    with pytest.warns(CanterWarning, match=f"max_policy_lag applies only .* this {algo} run without explorers"):
        trainer = canter.make_trainer(algo, "CartPole-v1", max_steps=64, n_envs=2, max_policy_lag=1)
    trainer.close()


def test_max_policy_lag_unset_gives_no_warning(recwarn):
    canter.make_trainer("impala", "CartPole-v1", max_steps=64, n_envs=2).close()
    assert not [w for w in recwarn if issubclass(w.category, CanterWarning)]


def test_impala_run_directory_checkpoint_loads_and_acts_the_same(tmp_path):
    agent = canter.train("impala", "CartPole-v1", run_dir=tmp_path / "run", seed=3, max_steps=2048, n_envs=4,
                         eval_episodes=2)
    loaded = canter.load(tmp_path / "run")
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))
    assert (tmp_path / "run" / "summary.json").exists()


def test_no_ray_import_without_explorers(tmp_path):
    code = textwrap.dedent("""
        import sys, canter
        import canter.distributed, canter.distributed.trainers, canter.distributed.pool
        canter.train("ppo", "CartPole-v1", run_dir=None, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1)
        canter.train("impala", "CartPole-v1", run_dir=None, max_steps=256, n_envs=2, eval_episodes=1)
        print("ray imported:", "ray" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "ray imported: False" in out.stdout


def test_explorers_without_ray_name_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--explorers", "2", "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "pip install 'canter[distributed]'" in err and "--explorers" in err
    assert not run_dir.exists()


def test_ray_address_needs_explorers(capsys, tmp_path):
    code = main(["train", "ppo", "--env", "CartPole-v1", "--ray-address", "auto", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "--explorers" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("address", ["nonsense", "127.0.0.1", "host:port", ":6379"])
def test_a_malformed_ray_address_is_refused_with_one_line_before_ray_starts(capsys, tmp_path, address):
    """Before, Ray was imported and printed its token-authentication warning above the error."""
    code = main(["train", "impala", "--env", "CartPole-v1", "--explorers", "2", "--ray-address", address,
                 "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [
        f"canter: error: 'ray_address' must be 'auto', host:port or ray://host:port, got '{address}'"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("scheme", ["", "ray://"])  # ray://: Ray's client timed out after 30 s, with its warning
def test_unreachable_ray_address_fails_fast_with_one_line(capsys, tmp_path, scheme):
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run_dir, address = tmp_path / "run", f"{scheme}127.0.0.1:{port}"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--explorers", "1", "--ray-address", address,
                 "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and f"no Ray cluster at '{address}'" in err
    assert not run_dir.exists()


def test_ray_address_auto_pointing_at_no_cluster_fails_fast_with_one_line(tmp_path):
    """``auto`` joins the cluster RAY_ADDRESS (or the last ``ray start``) names; when nothing listens there
    it fails like an explicit address. Before, Ray retried for minutes, printing its warnings (a
    subprocess: the old behaviour must not hang the test session)."""
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run_dir = tmp_path / "run"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from canter.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "train", "ppo", "--env", "CartPole-v1", "--explorers", "1",
                           "--ray-address", "auto", "--run-dir", str(run_dir), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.splitlines()) == 1
    assert f"no Ray cluster at '127.0.0.1:{port}' (where --ray-address auto points)" in proc.stderr
    assert not run_dir.exists()


def test_private_ray_stays_on_loopback_even_when_ray_was_imported_first():
    """A run's private Ray binds to 127.0.0.1 also when the user imported ray before canter (Ray reads
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER at import). Checked without starting Ray: ``ray.init`` is stubbed."""
    pytest.importorskip("ray")
    script = textwrap.dedent("""
        import os
        os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        import ray  # the user's own import, before canter connects
        from canter.distributed import cluster
        seen = {}
        ray.init = lambda **kw: seen.update(kw)
        cluster.connect(None)
        from ray._private import services
        print(services.get_node_ip_address(), services.resolve_ip_for_localhost("127.0.0.1"),
              os.environ["RAY_USAGE_STATS_ENABLED"], seen["include_dashboard"], seen["address"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["127.0.0.1", "127.0.0.1", "0", "False", "local"]


def test_async_trainer_applies_the_run_lr_control():
    # lr_decay (like plateaus and the divergence guard's cuts) acts through Trainer.set_progress
    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, n_steps=16, max_steps=1024, eval_every=0,
                                  eval_episodes=1, lr_decay="linear", lr=1e-3)
    lrs = [r.losses["learning_rate"] for r in trainer()]
    trainer.close()
    assert lrs[0] < 1e-3 and lrs == sorted(lrs, reverse=True)
    assert trainer.algorithm.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-9)


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


def test_a_resumed_run_keeps_counting_weight_broadcasts(tmp_path):
    """``weights_version`` (the broadcasts so far) is saved with the counters: an in-process IMPALA run
    stopped and resumed ends with the uninterrupted run's count (it restarted from 1 at the resume)."""
    from canter.checkpoint import load_checkpoint

    common = dict(n_envs=2, max_steps=1024, eval_every=300, eval_episodes=1, tensorboard=False, seed=2,
                  target_reward=None)

    def stop(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step >= 400 and trainer.resume_exact is None and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("impala", "CartPole-v1", run_dir=tmp_path / "whole", **common)
    canter.train("impala", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop}, **common)
    canter.resume(tmp_path / "part")
    (whole, _), (part, _) = (load_checkpoint(tmp_path / d / "checkpoints" / "last") for d in ("whole", "part"))
    assert part["trainer"]["env"]["version"] == whole["trainer"]["env"]["version"] > 10  # the pool's last version
    assert part["trainer"]["counters"]["weights_version"] == whole["trainer"]["counters"]["weights_version"]


def test_explorers_report_training_success_rates():
    """Episodes collected by an explorer carry their env's is_success, so charts/success_rate is
    reported as in one process (BitFlipping reports it; random play rarely flips all 10 bits)."""
    trainer = canter.make_trainer("impala", "BitFlipping-v0", seed=0, max_steps=3000, eval_every=0, eval_episodes=2,
                                  n_envs=4)
    rates = [r.success_rate for r in trainer()]
    assert rates and all(r is not None and 0.0 <= r <= 1.0 for r in rates)
    plain = canter.make_trainer("impala", "CartPole-v1", seed=0, max_steps=1000, eval_every=0, eval_episodes=2)
    assert all(r.success_rate is None for r in plain())  # CartPole reports no success


@pytest.mark.parametrize("algo", ["impala", "appo"])
def test_a_divergence_restore_keeps_the_explorer_working_and_publishes_the_restored_weights(algo):
    trainer = canter.make_trainer(algo, "CartPole-v1", n_envs=2, n_steps=8, max_steps=10**6, eval_every=0, seed=0,
                                  divergence_guard="restore")
    algorithm, calls, published = trainer.agent.algorithm, [0], []
    step, publish = algorithm.step, trainer.publish

    def poisoned(loss):
        calls[0] += 1
        return step(loss * float("nan") if calls[0] == 3 else loss)

    algorithm.step = poisoned
    trainer.publish = lambda: (published.append(trainer.guard.restores), publish())[1]
    records = [rec for _, rec in zip(range(6), trainer())]  # the queue emptied after the restore: IndexError
    trainer.close()
    assert len(records) == 6 and trainer.guard.restores == 1
    assert 1 in published  # the restored weights went out


def test_appo_skips_an_update_on_a_rollout_of_reset_rows_only():
    trainer = canter.make_trainer("appo", "CartPole-v1", n_envs=1, n_steps=1, max_steps=200, eval_every=0, seed=0)
    for _ in trainer():  # the row after each episode's end only resets the env: range(0, 0, 0) raised
        pass
    trainer.close()
    assert trainer.step >= 200


def test_explorers_reset_ou_noise_at_episode_ends():
    run, cfg = resolve_config("td3", "Pendulum-v1", hparams={"action_noise": "ou"}, seed=0, n_envs=1)
    env = make_vec_env(run.env, 1)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    resets, reset = [], agent.algorithm.reset_noise
    agent.algorithm.reset_noise = lambda done: (resets.append(done.clone()), reset(done))[1]
    Explorer(agent, env, seed=0).rollout(None, version=1, n_steps=205)  # Pendulum ends (truncated) at 200
    env.close()
    assert len(resets) == 1 and resets[0].tolist() == [True]


def test_noisy_dqn_explorers_explore_with_their_own_noise_not_epsilon():
    learner, env = _agent("dqn", seed=1, noisy=True)
    explorer_agent, _ = _agent("dqn", seed=2, noisy=True)
    Explorer(explorer_agent, env, index=0, count=4)
    assert explorer_agent.algorithm.epsilon == 0.0  # Ape-X's 0.4 was set on top of the noise
    load_explorer_weights(explorer_agent, explorer_weights(learner))
    noise = [[b for n, b in a.algorithm.q.named_buffers() if "eps" in n] for a in (learner, explorer_agent)]
    assert noise[0] and not all(torch.equal(a, b) for a, b in zip(*noise))  # not the learner's sample
    env.close()


def test_dropped_rollouts_still_end_their_episodes_in_the_reward_statistics():
    from canter.distributed.trainers import AsyncTrainer

    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, seed=0, normalize_reward=True, max_steps=10**4)
    seen = []
    trainer.rewards_of = lambda slot, r: (seen.append(r["version"]), np.zeros(1))[1]
    results = iter([{"version": -5}, {"version": 0}])  # the first is too old for max_policy_lag 0
    trainer.pool = type("Pool", (), {"wait": lambda self: (0, next(results)), "submit": lambda self, *a, **k: None})()
    trainer.receive = lambda rs: None
    trainer.run.max_policy_lag = 0
    slot, r, _ = AsyncTrainer.next_fresh_rollout(trainer)
    trainer.close()
    assert r["version"] == 0 and seen == [-5, 0] and trainer.dropped == 1


def test_impala_takes_no_optimizer_step_on_a_rollout_of_reset_rows_only():
    """With n_steps 1 and one env, the row after each episode's end is a rollout of its own with no real
    transition: IMPALA took an Adam step on it anyway (zero gradients, the parameters moved by momentum)."""
    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=1, n_steps=1, max_steps=300, eval_every=0, seed=0)
    algorithm, learn, moved = trainer.algorithm, trainer.algorithm.learn, []

    def spy(batch):
        if batch.valid.any():
            return learn(batch)
        before = [p.detach().clone() for p in algorithm.params]
        updates = algorithm.updates
        out = learn(batch)
        moved.append(algorithm.updates != updates or any(not torch.equal(p, b) for p, b in zip(algorithm.params, before)))
        return out

    algorithm.learn = spy
    for _ in trainer():
        pass
    trainer.close()
    assert moved and not any(moved)  # reset-only rollouts came, and none of them changed the network



def test_impala_leaves_the_advantage_of_a_single_row_unnormalised():
    """normalize_advantage on a rollout with one real transition (n_steps 1, one env) made its advantage
    (x - x) / eps = 0: no policy gradient at all. One row is left as it is, as PPO does."""
    losses = {}
    for normalize in (False, True):
        trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=1, n_steps=1, max_steps=8, eval_every=0,
                                      seed=0, normalize_advantage=normalize)
        losses[normalize] = [r.losses["policy_loss"] for r in trainer() if r.losses]
        trainer.close()
    assert losses[True] == losses[False] and any(x != 0 for x in losses[True])


@pytest.mark.parametrize("algo", ["ppo", "a2c", "trpo"])
def test_sync_learner_skips_a_batch_of_reset_rows_only(algo):
    """--explorers with n_steps 1 and one env: after every episode end the gathered batch has no real
    transition; the synchronous learner passed it to learn anyway (PPO/TRPO: 'range() arg 3 must not be
    zero', A2C: ZeroDivisionError). Driven here by the in-process pool, the same SyncTrainer.iteration."""
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import SyncTrainer

    run, cfg = resolve_config(algo, "CartPole-v1", hparams={"n_steps": 1}, n_envs=1, max_steps=300, eval_every=0)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = SyncTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    records = list(trainer())
    trainer.close()
    assert trainer.step >= 300 and any(not r.losses for r in records) and any(r.losses for r in records)
    assert trainer._lags == []  # in-process: no lag list (it grew by one entry per rollout, never read)


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


def test_a_replaced_explorers_late_result_counts_no_second_replacement():
    """An explorer's rollout raised (the pool replaced it) while its next queued rollout had already
    finished on the old process: that late result is still learned from, and one replacement counts
    once in explorer_restarts (once, the pool took the process change for a Ray restart and counted
    2). Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed.pool import RayPool

    class RayError(Exception):
        pass

    outcomes = {"A": RayError("simulated env crash"), "B": {"pid": 100}, "C": {"pid": 200}, "up": 200}

    def get(ref):
        if isinstance(outcomes[ref], Exception):
            raise outcomes[ref]
        return outcomes[ref]

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RayError), get=get, kill=lambda *a, **k: None)
    pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, ["old"], [0], [0], [None], 0
    pool._slot_version, pool._starting, pool._fresh = [1], {}, set()
    pool._spawn = lambda slot: SimpleNamespace(pid=SimpleNamespace(remote=lambda: "up"))  # the replacement
    pool.submit = lambda slot, **kw: None
    pool.in_flight = {"A": (0, 0, {}), "B": (0, 0, {})}  # two rollouts queued on the first process (pid 100)
    assert pool._receive("A") == (0, None)  # it raised: replaced (generation 1)
    assert pool._receive("B")[1]["pid"] == 100  # the old process had finished the next one: still learned from
    assert pool.failures == [1]  # the old process's late success is no sign the replacement works
    assert pool._receive("up") == (0, None)  # the replacement is up
    pool.in_flight["C"] = (0, 1, {})
    assert pool._receive("C")[1]["pid"] == 200  # the replacement's first result
    assert pool.restarts == 1 and pool.pids == [200] and pool.failures == [0]


def test_apex_rollout_too_big_for_memory_is_refused_in_setup_naming_train_freq():
    """An Ape-X explorer's rollout is one training phase (train_freq env steps): a train_freq too big for
    memory failed inside every explorer (4 Ray replacements, then 'lower hparams.n_steps', which DQN
    does not have), after the run directory was written. Now refused in the learner's setup, as IMPALA's
    n_steps is. Driven by the in-process pool, the same ApeXTrainer.setup."""
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer
    from canter.errors import CanterError

    run, cfg = resolve_config("dqn", "CartPole-v1", hparams={"train_freq": 10**11}, n_envs=1, max_steps=2000,
                              eval_every=0)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    try:
        with pytest.raises(CanterError, match=r"does not fit in memory .*; lower hparams\.train_freq$"):
            next(iter(trainer()))
        assert trainer.step == 0  # refused before any explorer stepped
    finally:
        trainer.close()


def test_a_dead_explorers_lost_rollouts_run_on_a_fresh_replacement_with_the_weights_of_when_it_is_up(monkeypatch):
    """Ray restarted a killed explorer (max_restarts) and re-ran its lost rollouts (max_task_retries): the
    restarted actor re-ran its constructor with the run's start seeds (its first rollout began from the
    run's very first observations) and the lost calls with the weights they were first given (measured:
    IMPALA, 2 explorers, a SIGKILL: the next rollouts were 154 and 159 versions old). Ray now restarts
    nothing; the pool replaces the dead explorer (a fresh seed block) and sends the lost rollouts once the
    replacement is up, with the weights of then. Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module

    class RayError(Exception):
        pass

    class Ref:
        def __init__(self, value):
            self.value = value

    class Actor:
        def __init__(self, generation):
            self.generation, self.rollouts = generation, []
            self.rollout = SimpleNamespace(remote=self._rollout)
            self.pid = SimpleNamespace(remote=lambda: Ref(1000 + generation))

        def _rollout(self, weights_ref, version, **kw):
            self.rollouts.append(version)
            return Ref({"pid": 1000 + self.generation, "version": version})

    options = {}

    def remote(cls):
        def with_options(**kw):
            options.update(kw)
            return SimpleNamespace(remote=lambda slot, count, run, cfg, generation, spaces: Actor(generation))
        return SimpleNamespace(options=with_options)

    def get(ref):
        if isinstance(ref.value, Exception):
            raise ref.value
        return ref.value

    ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RayError), get=get, put=lambda w: Ref(w),
                          kill=lambda *a, **k: None, remote=remote, cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    run, cfg = resolve_config("impala", "CartPole-v1", n_envs=2)
    pool = pool_module.RayPool(run, cfg, 1)
    assert options["max_restarts"] == 0 and options["max_task_retries"] == 0  # Ray re-runs nothing
    pool.publish({}, 1)
    pool.submit(0, n_steps=8)
    pool.submit(0, n_steps=8)
    lost = list(pool.in_flight)
    for ref in lost:  # the explorer's process died: both queued rollouts are lost
        ref.value = RayError("The actor is dead because its worker process has died.")
    assert pool._receive(lost[0]) == (0, None)
    assert pool.generation == [1] and pool.restarts == 1  # a replacement, with a fresh seed block
    pool.publish({}, 2)
    assert pool._receive(lost[1]) == (0, None)
    pool.publish({}, 3)  # the learner goes on with the other explorers while the replacement starts
    pool.submit(0, n_steps=8)  # a rollout the learner queues meanwhile waits for the replacement as well
    pool.publish({}, 4)
    assert pool.actors[0].rollouts == []
    (ready,) = pool.in_flight  # the replacement is up
    assert pool._receive(ready) == (0, None) and pool.pids == [1001]
    assert pool.actors[0].rollouts == [4, 4, 4]  # all three carry the weights of when it was up
    results = [pool._receive(ref)[1] for ref in list(pool.in_flight)]
    assert [r["version"] for r in results] == [4, 4, 4] and pool.restarts == 1 and pool.failures == [0]


def test_the_pool_hands_over_the_earliest_submitted_of_the_finished_rollouts():
    """``ray.wait(refs, num_returns=1)`` returns any one of the finished calls, not the first in its list
    (measured with a real cluster): an explorer's rollouts reached the learner out of order (22 of 198 in an
    IMPALA run with 2 explorers), one waited for seconds (lag 86), and with Ape-X an explorer whose results
    were passed over got no new work (6 rollouts from one, 34 from the other). Driven with a stand-in for
    Ray that, as Ray may, returns the last finished call when asked for one."""
    from types import SimpleNamespace

    from canter.distributed.pool import RayPool

    done = {"a1", "b1", "a2"}  # explorer a's two queued rollouts and b's first have finished

    def wait(refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r in done]
        return (ready[-num_returns:] if num_returns == 1 else ready[:num_returns]), []

    def result(ref):
        slot = 0 if ref[0] == "a" else 1
        return {"pid": 10 + slot, "index": slot, "episode_returns": np.zeros(0),
                "episode_lengths": np.zeros(0, np.int64), "episode_envs": np.zeros(0, np.int64), "name": ref}

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), get=result, wait=wait)
    pool.generation, pool.failures, pool.pids, pool.restarts = [0, 0], [0, 0], [10, 11], 0
    pool._fresh = set()
    pool.in_flight = {ref: (0 if ref[0] == "a" else 1, 0, {}) for ref in ("a1", "b1", "a2", "b2")}
    assert [pool.wait()[1]["name"] for _ in range(3)] == ["a1", "b1", "a2"]


def test_a_resumed_runs_replacement_explorer_does_not_replay_the_interrupted_runs_replacement(monkeypatch):
    """A resumed Ray run resets its explorers' envs from a new seed (fresh episodes), but a replacement it
    made later was built from the run's seed: slot i's g-th replacement got seed + i * n_envs + g *
    100,000,007, the very seeds of the interrupted run's g-th replacement of that slot, and replayed its
    episodes. Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module

    built = []

    def remote(cls):
        def actor(slot, count, run, cfg, generation, spaces):
            built.append((generation, run.seed))
            return SimpleNamespace(reset=SimpleNamespace(remote=lambda seed: None),
                                   pid=SimpleNamespace(remote=lambda: None))
        return SimpleNamespace(options=lambda **kw: SimpleNamespace(remote=actor))

    ray = SimpleNamespace(get=lambda refs: refs, kill=lambda *a, **k: None, remote=remote,
                          cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    run, cfg = resolve_config("impala", "CartPole-v1", n_envs=2, seed=3)
    pool = pool_module.RayPool(run, cfg, 1)
    pool.reset(3 + 7_777_777 + 4096)  # a resumed run's fresh episodes (Trainer.load_resume_state)
    pool._replace(0, RuntimeError("explorer died"))
    assert built == [(0, 3), (1, 3 + 7_777_777 + 4096)]


def test_a_replacement_explorers_first_rollout_starts_its_envs_returns_from_zero():
    """With normalize_reward, the learner keeps one running discounted return per env. A replacement
    explorer's envs start new episodes, but their returns went on from the dead explorer's unfinished
    episodes (no done between them), as if the new episodes continued the old ones; a resume's fresh
    episodes zero them (reset_returns). The pool marks a replacement's first rollout and the learner
    zeroes that explorer's returns. Driven with a stand-in for Ray and an in-process explorer's rollout."""
    from types import SimpleNamespace

    from canter.distributed.pool import RayPool

    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, seed=0, normalize_reward=True, max_steps=10**4)
    try:
        rollout = trainer.pool.explorer.rollout(None, 0, n_steps=2)
        assert not rollout["dones"].any()
        pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
        pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), kill=lambda *a, **k: None,
                                   get=lambda ref: rollout if ref == "rollout" else 7)
        pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, ["old"], [0], [0], [5], 0
        pool._slot_version, pool._starting, pool._fresh, pool.in_flight = [1], {}, set(), {}
        pool._spawn = lambda slot: SimpleNamespace(pid=SimpleNamespace(remote=lambda: "up"))
        pool.submit = lambda slot, **kw: None
        pool._replace(0, RuntimeError("explorer died"))
        pool._receive("up")
        pool.in_flight["rollout"] = (0, 1, {})
        _, result = pool._receive("rollout")  # the replacement's first rollout
        trainer.agent._returns[:] = 40.0  # the dead explorer's episodes, 40 steps in
        trainer.receive([result])
        scaled = trainer.rewards_of(0, result)
        assert trainer.agent._returns.tolist() == pytest.approx([1 + trainer.agent.gamma] * 2)
        assert scaled.shape == (2, 2)
    finally:
        trainer.close()


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
