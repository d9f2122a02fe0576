"""IMPALA / APPO and the explorer learners (synchronous, Ape-X) in one process, with the in-process
explorer: learning, multi-agent rows, observation and reward statistics, max_policy_lag, the lr control,
checkpoints and resumes, divergence restores, and rollouts of reset rows only."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter
from canter.config import resolve_config
from canter.distributed.explorer import Explorer
from canter.envs import make_vec_env
from canter.errors import CanterError, CanterWarning


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
        valid.extend(zip(out["valid"], out["dones"].astype(bool)))
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
    # one copy: after a step, the rows of the agents that took part in it and did not finish hold observations
    # (a final one is not counted, as SB3's VecNormalize counts none), and every row where none did (the step
    # reset the copy)
    real = 2 + sum(2 if not v.any() else int((v & ~d).sum()) for v, d in valid[:-1])
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


def test_async_trainer_applies_the_run_lr_control():
    # lr_decay (like plateaus and the divergence guard's cuts) acts through Trainer.set_progress
    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, n_steps=16, max_steps=1024, eval_every=0,
                                  eval_episodes=1, lr_decay="linear", lr=1e-3)
    lrs = [r.losses["learning_rate"] for r in trainer()]
    trainer.close()
    assert lrs[0] < 1e-3 and lrs == sorted(lrs, reverse=True)
    assert trainer.algorithm.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-9)


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


@pytest.fixture
def user_algo_without():
    """Register a user algorithm (A2C, or ``base``) whose ``act`` leaves out the outputs named; yields the
    registering function, which returns its name."""
    from canter.algorithms.a2c import A2C
    from canter.algorithms.base import ActOutput
    from canter.registry import _REGISTRY, register

    names = []

    def make(*missing: str, base: type = A2C) -> str:
        class Partial(base):  # noqa: D401
            """``base`` without some of act's outputs."""

            def act(self, obs, deterministic=False):
                out = super().act(obs, deterministic)
                return ActOutput(out.actions, *(None if k in missing else getattr(out, k)
                                                for k in ("log_probs", "values")))

            def act_numpy(self, obs, deterministic=False):
                return None

        name = f"test_only_partial_{base.name}"
        _REGISTRY["algorithm"].pop(name, None)
        register("algorithm", name)(Partial)
        names.append(name)
        return name

    yield make
    for name in names:  # other tests go over every registered algorithm
        _REGISTRY["algorithm"].pop(name, None)


def _explorer_trainer(algo: str, driver: str):
    """``algo`` on CartPole in one process (``single``; IMPALA's in-process explorer) or by the synchronous
    (``sync``) or asynchronous (``async``) learner with the in-process pool, as with Ray explorers."""
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import AsyncTrainer, SyncTrainer

    kw = dict(n_envs=2, max_steps=64, eval_every=0, eval_episodes=1)
    if driver == "single":
        return canter.make_trainer(algo, "CartPole-v1", n_steps=8, **kw)
    run, cfg = resolve_config(algo, "CartPole-v1", hparams={"n_steps": 8}, **kw)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    return {"sync": SyncTrainer, "async": AsyncTrainer}[driver](agent, LocalPool(Explorer(agent, env, seed=0)),
                                                                 None, run)


@pytest.mark.parametrize("driver", ["single", "sync"])
def test_an_on_policy_algorithm_without_log_probs_learns_in_one_process_and_on_explorers(user_algo_without, driver):
    """A user algorithm whose act returns no log-probabilities: the explorer leaves them out of its rollout
    and the synchronous learner failed with KeyError: 'log_probs' (one process: AttributeError from
    to_numpy(None)). Both store NaN now (A2C's learn never reads them); values, which GAE needs, are
    refused in one line."""
    trainer = _explorer_trainer(user_algo_without("log_probs"), driver)
    records = list(trainer())
    trainer.close()
    assert records[-1].step == 64 and trainer.algorithm.updates == 4
    assert trainer.buffer.log_probs.isnan().all()
    trainer = _explorer_trainer(user_algo_without("log_probs", "values"), driver)
    with pytest.raises(CanterError, match="^algorithm 'test_only_partial_a2c' returned no values from act"):
        list(trainer())
    trainer.close()


@pytest.mark.parametrize("driver", ["single", "async"])
def test_an_async_algorithm_without_log_probs_is_refused_in_one_line(user_algo_without, driver):
    """V-trace needs the behaviour policy's log-probabilities: a user IMPALA whose act returns none failed with
    a raw KeyError: 'log_probs' (the explorer leaves them out of its rollout), in one process as on explorers."""
    from canter.algorithms.impala import IMPALA

    trainer = _explorer_trainer(user_algo_without("log_probs", base=IMPALA), driver)
    try:
        with pytest.raises(CanterError, match=r"^algorithm 'test_only_partial_impala' returned no log-probabilities "
                                              r"from act \(ActOutput\.log_probs is None\); an asynchronous algorithm's "
                                              r"act must return the behaviour policy's log-probabilities for V-trace"):
            list(trainer())
        assert trainer.algorithm.updates == 0
    finally:
        trainer.close()


def test_a_learn_that_reads_missing_log_probs_stops_at_once(user_algo_without):
    """PPO's learn reads the stored log-probabilities: from an act that gives none they are NaN, so the first
    update's loss is not finite and the divergence guard stops the run (instead of training on zeros)."""
    from canter.algorithms.ppo import PPO
    from canter.trainers.guard import TrainingDiverged

    trainer = canter.make_trainer(user_algo_without("log_probs", base=PPO), "CartPole-v1", n_envs=2, max_steps=64,
                                  eval_every=0, eval_episodes=1, n_steps=8, batch_size=16)
    with pytest.raises(TrainingDiverged, match="non-finite loss 'policy_loss'"):
        list(trainer())
    assert trainer.step == 16  # the first rollout's update
    trainer.close()


def test_an_explorers_episodes_are_stamped_with_the_step_they_ended_on():
    """history.parquet's ``step`` of an IMPALA / APPO episode was the learner's step after the whole rollout
    (every episode of a 32-step rollout at 32, 64, ...), where the single-process trainers give the env step
    the episode ended on. With one env, episode ``k`` ends after its own and the earlier episodes' steps plus
    the ``k`` reset-only steps between them."""
    trainer = canter.make_trainer("impala", "CartPole-v1", seed=0, n_envs=1, n_steps=32, max_steps=600,
                                  eval_every=0, eval_episodes=1)
    episodes = [e for r in trainer() for e in r.episodes]
    trainer.close()
    lengths = np.array([e.episode_length for e in episodes])
    assert len(episodes) > 5
    assert [e.step for e in episodes] == (np.cumsum(lengths) + np.arange(len(lengths))).tolist()
