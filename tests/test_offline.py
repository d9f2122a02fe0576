"""Offline training: datasets (collect, save, load), the offline trainer, BC, discrete CQL and TD3+BC,
and the ``canter collect`` / ``canter train --dataset`` commands."""
from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.agents.agent import Agent
from canter.api import make_agent
from canter.config import resolve_config
from canter.checkpoint import load_checkpoint, save_checkpoint
from canter.data.dataset import TransitionDataset, collect, from_replay
from canter.errors import CanterError
from tests.test_cli_errors import assert_one_line_error, run_cli, snapshot


def best_eval(algo: str, **kwargs: object) -> tuple[float, object]:
    """Run an offline trainer to its end; its best evaluation return and the trainer."""
    trainer = canter.make_trainer(algo, **kwargs)
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    return trainer.best_eval_return, trainer


@pytest.fixture(scope="module")
def expert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PPO run that solved CartPole (the preset, seed 1)."""
    run_dir = tmp_path_factory.mktemp("expert") / "ppo"
    agent = canter.train("ppo", env="CartPole-v1", target_reward=475, seed=1, run_dir=run_dir)
    assert json.loads((run_dir / "summary.json").read_text())["solved"]
    return agent.run_dir


# ---------------------------------------------------------------------------------------------- datasets


def test_collect_stores_every_transition_once_in_order_with_real_final_observations():
    data = collect("CartPole-v1", 3000, None, seed=7, env_kwargs={"max_episode_steps": 20})
    assert len(data) == 3000 and data.obs.shape == (3000, 4) and data.actions.dtype == np.int64
    assert set(np.unique(data.actions)) <= {0, 1} and np.all(data.rewards == 1.0)
    ends = data.terminated | data.truncated
    # inside an episode the next observation is the next row's observation; after an end it is not
    # (the row after an end is the first observation of a new episode)
    inside = np.flatnonzero(~ends[:-1])
    np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
    after_end = np.flatnonzero(ends[:-1])
    assert len(after_end) > 50 and not np.any(np.all(data.next_obs[after_end] == data.obs[after_end + 1], axis=1))
    assert (data.truncated & ~data.terminated).any() and (data.terminated & ~data.truncated).any()
    lengths = np.diff(np.concatenate([[-1], np.flatnonzero(ends)]))
    assert lengths.max() == 20 and np.all(lengths[data.truncated[ends]] == 20)  # truncation at the time limit
    np.testing.assert_array_equal(data.episode_returns(), lengths.astype(float))
    assert data.info["episodes"] == len(lengths) and data.info["policy"] == "random"
    again = collect("CartPole-v1", 3000, None, seed=7, env_kwargs={"max_episode_steps": 20})
    np.testing.assert_array_equal(again.obs, data.obs)  # seeded


def test_random_collection_draws_apart_from_the_env():
    """Uniform random actions must not share the env's seeded stream: on match_agents (the reward is 1
    when the action is the argmax of the observation, drawn from the env's generator) a generator
    seeded like the env's picked the target every time and earned the maximum, 8 per episode."""
    for seed in (0, 1, 7):
        data = collect("pettingzoo:tests.match_agents", 400, None, seed=seed)
        assert 1.5 < data.info["mean_return"] < 4.0, (seed, data.info)  # random play: 8/3


def test_random_actions_of_an_integer_box_reach_its_upper_bound():
    """A Box of integers: uniform floats truncated to the dtype drew 0..9 from Box(0, 10), never 10
    (canter collect's random actions); gymnasium's Box.sample draws low..high, both included."""
    from canter.envs.random_actions import random_env_actions

    space = gym.spaces.Box(np.array([0, -3]), np.array([10, -1]), dtype=np.int64)
    a = random_env_actions(space, 2000, np.random.default_rng(0))
    assert a.dtype == np.int64 and all(space.contains(x) for x in a)
    assert sorted(set(a[:, 0])) == list(range(11)) and sorted(set(a[:, 1])) == [-3, -2, -1]


def test_random_actions_of_an_unbounded_box_are_finite_and_keep_the_finite_bounds(tmp_path):
    """Box actions with infinite bounds (PPO's Gaussian policies need none): a random collection, or
    --epsilon, raised numpy's OverflowError ('Range exceeds valid bounds') with a traceback. Unbounded
    dimensions now draw as gymnasium's Box.sample (normal, or exponential away from one bound)."""
    from canter.envs.random_actions import random_env_actions
    from canter.registry import register
    from support import Box22Actions

    low = np.array([[0.0, -np.inf], [-np.inf, -1.0]], np.float32)
    high = np.array([[1.0, np.inf], [3.0, np.inf]], np.float32)
    space = gym.spaces.Box(low, high, dtype=np.float32)
    a = random_env_actions(space, 500, np.random.default_rng(0))
    assert a.shape == (500, 2, 2) and a.dtype == np.float32 and np.isfinite(a).all()
    assert all(space.contains(x) for x in a)
    assert a[:, 0, 1].min() < -1 and a[:, 0, 1].max() > 1 and a[:, 1, 1].min() > -1.0 and a[:, 1, 0].max() <= 3.0
    bounded = gym.spaces.Box(-1, 2, (3,), np.float32)  # finite bounds: the same uniform draws as before
    np.testing.assert_array_equal(random_env_actions(bounded, 4, np.random.default_rng(1)),
                                  np.random.default_rng(1).uniform(bounded.low, bounded.high, (4, 3)).astype(np.float32))

    class Unbounded(Box22Actions):
        action_space = space

    register("env", "UnboundedActions-collect-test")(lambda render_mode=None, **kw: Unbounded())
    data = collect("UnboundedActions-collect-test", 50, None, seed=0)
    assert data.actions.shape == (50, 2, 2) and np.isfinite(data.actions).all()


def test_a_multi_agent_collection_is_stored_agent_by_agent_in_whole_episodes():
    """Each agent's episodes are contiguous (each row's next_obs is the next row's obs inside an
    episode), so episode returns are one agent's: at most 8 on match_agents, whose agents leave on a
    miss (random play earns ~0.5)."""
    for kwargs in ({}, {"miss_leaves": True, "n_agents": 3}):
        data = collect("pettingzoo:tests.match_agents", 300, None, seed=2, env_kwargs=kwargs)
        assert len(data) == 300
        ends = np.flatnonzero(data.terminated | data.truncated)
        inside = np.setdiff1d(np.arange(ends[-1]), ends)
        np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
        returns = data.episode_returns()
        assert returns.max() <= 8 and len(returns) == len(ends)
        expected = 0.5 if kwargs else 8 / 3
        assert abs(returns.mean() - expected) < 0.4, (kwargs, returns.mean())


def test_dataset_round_trip_and_refusals(tmp_path, expert):
    data = collect("Pendulum-v1", 300, None, seed=1)
    base = data.save(tmp_path / "pend")
    assert base.with_suffix(".safetensors").exists() and base.with_suffix(".json").exists()
    back = TransitionDataset.load(tmp_path / "pend.safetensors")
    for name in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name))
    assert back.env_id == "Pendulum-v1" and back.action_space == data.action_space and back.info == data.info
    with pytest.raises(CanterError, match="dataset not found"):
        TransitionDataset.load(tmp_path / "missing")
    with pytest.raises(CanterError, match="checkpoint, not a dataset"):
        TransitionDataset.load(expert / "checkpoints" / "best")
    with pytest.raises(CanterError, match="actions have shape"):
        TransitionDataset(data.obs, data.actions[:, 0], data.rewards, data.next_obs, data.terminated,
                          data.truncated, "Pendulum-v1", data.observation_space, data.action_space)


def test_discrete_actions_outside_the_space_are_refused_in_one_line(tmp_path, capsys):
    """A Discrete action the space does not hold (a user's 0-based actions of a space with start 1,
    a corrupt file) crashed the first update with IndexError (cross-entropy) or RuntimeError (CQL's
    gather); the dataset is refused when built or loaded, and the CLI says so in one line."""
    data = collect("CartPole-v1", 200, None, seed=0)
    fields = dict(rewards=data.rewards, next_obs=data.next_obs, terminated=data.terminated, truncated=data.truncated,
                  env_id="CartPole-v1", observation_space=data.observation_space, action_space=data.action_space)
    for bad, shown in ((3, "3"), (-1, "-1"), (0.5, "0.5")):
        actions = data.actions.astype(type(bad)).copy()
        actions[7] = bad
        with pytest.raises(CanterError, match=f"dataset action {shown} \\(row 7, one of 1\\) is not in the action space"):
            TransitionDataset(data.obs, actions, **fields)
    with pytest.raises(CanterError, match="integers from 1 to 2"):  # 0-based actions of a space starting at 1
        TransitionDataset(data.obs, data.actions, **{**fields, "action_space": gym.spaces.Discrete(2, start=1)})
    shifted = TransitionDataset(data.obs, data.actions + 1, **{**fields, "action_space": gym.spaces.Discrete(2, start=1)})
    assert len(shifted) == 200
    # a file written with such actions (by an older canter, or by hand) is refused when training from it
    def edit(state):
        state["actions"] = np.where(np.arange(200) == 7, 5, state["actions"])

    code, err = _train_from_edited_dataset(tmp_path, capsys, data, "bc", edit)
    assert_one_line_error(code, err, "dataset action 5 (row 7", "Discrete(2)")
    assert not (tmp_path / "run").exists()


def _train_from_edited_dataset(tmp_path, capsys, data, algo: str, edit) -> tuple[int, str]:
    """Save ``data``, change its arrays with ``edit(state)`` as a file written by hand or by an older canter
    could hold them, and train ``algo`` from that file through the CLI: ``(exit code, stderr)``."""
    state, meta = load_checkpoint(data.save(tmp_path / "data"))
    edit(state)
    save_checkpoint(tmp_path / "bad", state, {k: v for k, v in meta.items() if k in ("kind", "env", "observation_space",
                                                                                 "action_space", "info", "env_kwargs")})
    code, _, err = run_cli(capsys, "train", algo, "--dataset", str(tmp_path / "bad"), "--max-steps", "10", "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    return code, err


def test_non_finite_dataset_values_are_refused_in_one_line(tmp_path, capsys):
    """A NaN in a dataset's observations made training stop with 'training diverged ... try a lower
    learning rate' after writing a run directory; the dataset is refused when built or loaded."""
    data = collect("Pendulum-v1", 200, None, seed=0)
    arrays = {k: getattr(data, k).copy() for k in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")}
    spaces = dict(env_id="Pendulum-v1", observation_space=data.observation_space, action_space=data.action_space)
    for name, value in (("obs", np.nan), ("next_obs", np.inf), ("actions", np.nan), ("rewards", -np.inf)):
        bad = {k: v.copy() for k, v in arrays.items()}
        bad[name][9] = value
        with pytest.raises(CanterError, match=f"dataset {name} hold non-finite values .*row 9"):
            TransitionDataset(**bad, **spaces)
    code, err = _train_from_edited_dataset(tmp_path, capsys, data, "td3bc",
                                           lambda state: state["obs"].__setitem__((3, 1), np.nan))
    assert_one_line_error(code, err, "dataset obs hold non-finite values", "row 3")
    assert not (tmp_path / "run").exists()


def test_from_env_actions_inverts_to_env_actions():
    run, cfg = resolve_config("td3bc", "Pendulum-v1")
    box = gym.spaces.Box(np.array([-2.0, 0.0], dtype=np.float32), np.array([2.0, 5.0], dtype=np.float32))
    agent = make_agent(run, cfg, gym.spaces.Box(-1, 1, (3,), np.float32), box)
    squashed = np.array([[-1.0, 1.0], [0.5, -0.25]], dtype=np.float32)
    env_actions = agent.to_env_actions(squashed)
    np.testing.assert_allclose(env_actions, [[-2.0, 5.0], [1.0, 1.875]])
    np.testing.assert_allclose(agent.from_env_actions(env_actions), squashed, atol=1e-6)
    run, cfg = resolve_config("bc", "CartPole-v1")
    discrete = Agent(make_agent(run, cfg, gym.spaces.Box(-1, 1, (4,), np.float32),
                                gym.spaces.Discrete(3, start=-1)).algorithm)
    np.testing.assert_array_equal(discrete.from_env_actions(np.array([-1, 0, 1])), [0, 1, 2])
    np.testing.assert_array_equal(discrete.to_env_actions(np.array([0, 1, 2])), [-1, 0, 1])


def test_box_actions_reach_the_env_in_the_spaces_dtype():
    """A Box of integers (or float64) takes actions of its own dtype: PPO's and SAC's float actions were
    passed on as float64 (3.7, 0.2), which such a space does not contain."""
    obs = gym.spaces.Box(-1, 1, (3,), np.float32)
    ints = gym.spaces.Box(0, 10, (2,), np.int64)
    for algo, actions, expected in [("ppo", [[3.7, 12.0], [-1.0, 0.2]], [[4, 10], [0, 0]]),
                                    ("sac", [[0.5, 1.0], [-1.0, -0.86]], [[8, 10], [0, 1]])]:
        run, cfg = resolve_config(algo, "Pendulum-v1")
        agent = make_agent(run, cfg, obs, ints)
        env_actions = agent.to_env_actions(np.array(actions, np.float32))
        np.testing.assert_array_equal(env_actions, expected)
        assert env_actions.dtype == np.int64 and all(ints.contains(a) for a in env_actions)
        assert ints.contains(agent.predict(np.zeros(3, np.float32)))
    run, cfg = resolve_config("ppo", "Pendulum-v1")
    doubles = gym.spaces.Box(-1, 1, (2,), np.float64)
    assert make_agent(run, cfg, obs, doubles).to_env_actions(np.zeros((1, 2), np.float32)).dtype == np.float64


def test_a_box_dimension_with_equal_bounds_converts_to_a_finite_action():
    """low == high in one dimension: (a - low) / (high - low) was 0 / 0, NaN actions for TD3+BC's batches."""
    run, cfg = resolve_config("td3bc", "Pendulum-v1")
    box = gym.spaces.Box(np.array([-2.0, 3.0], dtype=np.float32), np.array([2.0, 3.0], dtype=np.float32))
    agent = make_agent(run, cfg, gym.spaces.Box(-1, 1, (3,), np.float32), box)
    with np.errstate(all="raise"):  # no 0 / 0 either
        converted = agent.from_env_actions(np.array([[1.0, 3.0], [-2.0, 3.0]], dtype=np.float32))
    np.testing.assert_array_equal(converted, [[0.5, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(agent.to_env_actions(converted), [[1.0, 3.0], [-2.0, 3.0]])



def _assert_whole_episodes_in_order(data: TransitionDataset) -> None:
    """Every transition belongs to a complete CartPole episode stored in order: each starts at a reset
    state (all values within 0.05) and ends the dataset or is followed by the next one's transitions."""
    ends = data.terminated | data.truncated
    assert ends[-1] and data.info["episodes"] == ends.sum()
    starts = np.concatenate([[0], np.flatnonzero(ends[:-1]) + 1])
    assert np.all(np.abs(data.obs[starts]) <= 0.05)
    inside = np.flatnonzero(~ends)
    np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
    np.testing.assert_array_equal(data.episode_returns(), np.diff(np.concatenate([starts, [len(data)]])))


def test_replay_of_several_envs_becomes_whole_episodes(tmp_path):
    """Two envs interleaved in a ring that wrapped: each env's oldest fragment (its start overwritten)
    and unfinished last episode are left out (they were once counted as episodes)."""
    run = tmp_path / "dqn"
    canter.train("dqn", env="CartPole-v1", run_dir=run, seed=0, n_envs=2, max_steps=1200, buffer_size=400,
                 learning_starts=200, train_freq=4, gradient_steps=1, net_arch=[16], eval_every=0, eval_episodes=1)
    data = from_replay(run)
    assert data.info["partial_episode_transitions_left_out"] > 0
    _assert_whole_episodes_in_order(data)

def test_replay_cut_by_an_inexact_resume_keeps_whole_episodes(tmp_path):
    """async envs cannot be saved: the resume starts fresh episodes, and the episode in progress at the
    checkpoint ends without an end; it was glued to the next one."""
    run = tmp_path / "dqn"
    kw = dict(seed=0, n_envs=1, vectorization="async", buffer_size=5000, learning_starts=100, train_freq=4,
              gradient_steps=1, net_arch=[8], eval_every=0, eval_episodes=1, eval_envs=1)
    canter.train("dqn", env="CartPole-v1", run_dir=run, max_steps=310, **kw)
    canter.resume(run, max_steps=620)
    assert json.loads((run / "summary.json").read_text())["resume_exact"] is False
    data = from_replay(run)
    assert data.info["partial_episode_transitions_left_out"] > 0
    _assert_whole_episodes_in_order(data)


def test_a_replay_dataset_reports_its_episodes_mean_return(tmp_path, capsys):
    """Its info has the mean return of its whole episodes, as a collected dataset's has (canter collect
    --from-replay printed 'N complete episodes, mean return n/a')."""
    run = tmp_path / "dqn"
    canter.train("dqn", env="CartPole-v1", run_dir=run, seed=0, max_steps=300, learning_starts=100, train_freq=4,
                 gradient_steps=1, net_arch=[8], eval_every=0, eval_episodes=1, eval_envs=1)
    data = from_replay(run)
    assert data.info["episodes"] > 0
    assert data.info["mean_return"] == pytest.approx(float(data.episode_returns().mean()))
    code, out, err = run_cli(capsys, "collect", str(run), "--from-replay", "--out", str(tmp_path / "replay"))
    assert code == 0, err
    assert "n/a" not in out and f"mean return {data.info['mean_return']:.2f}" in out


def test_an_ape_x_runs_sharded_replay_becomes_a_dataset(tmp_path):
    from canter.api import _with_run_dir
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer
    from canter.envs import make_vec_env

    run, cfg = resolve_config("dqn", "CartPole-v1", max_steps=600, eval_every=0, eval_episodes=1, eval_envs=1,
                              n_envs=1, hparams=dict(buffer_size=300, learning_starts=100, net_arch=[8]))
    env, eval_env = make_vec_env(run.env, 1, "sync"), make_vec_env(run.env, 1, "sync")
    agent = make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0, per_explorer_exploration=False)), eval_env, run)
    driver = _with_run_dir(trainer, run, cfg, tmp_path / "apex", True, None)
    for _ in driver():
        pass
    driver.close()
    data = from_replay(tmp_path / "apex")  # its buffer is one shard per explorer: KeyError 'capacity'
    assert len(data) > 0 and data.info["episodes"] > 0
    _assert_whole_episodes_in_order(data)


def test_an_off_policy_runs_replay_buffer_becomes_a_dataset(tmp_path, expert, capsys):
    run = tmp_path / "dqn"
    canter.train("dqn", env="CartPole-v1", run_dir=run, seed=0, max_steps=3000, buffer_size=1000, learning_starts=500,
                 train_freq=4, gradient_steps=1, net_arch=[32], eval_every=0, eval_episodes=1)
    data = from_replay(run)
    saved = load_checkpoint(run / "checkpoints" / "last")[0]["trainer"]["buffer"]
    assert bool(saved["full"])  # the ring buffer wrapped around: the oldest episode lost its start
    assert len(data) + data.info["partial_episode_transitions_left_out"] == int(saved["count"])
    _assert_whole_episodes_in_order(data)
    assert set(np.unique(data.actions)) == {0, 1} and np.all(data.rewards == 1.0)
    assert data.info["policy"] == "replay" and data.info["algorithm"] == "dqn"

    code, out, err = run_cli(capsys, "collect", str(run), "--from-replay", "--out", str(tmp_path / "replay"))
    assert code == 0, err
    back = TransitionDataset.load(tmp_path / "replay")
    np.testing.assert_array_equal(back.obs, data.obs)
    np.testing.assert_array_equal(back.actions, data.actions)
    _, trainer = best_eval("cql", dataset=str(tmp_path / "replay"), max_steps=200, gradient_steps=100,
                           net_arch=[32], eval_every=0, eval_episodes=1, target_reward=None)
    assert trainer.step == 200 and trainer.best_eval_return is not None
    _, trainer = best_eval("cql", dataset=str(tmp_path / "replay"), max_steps=250, gradient_steps=100,
                           net_arch=[32], eval_every=0, eval_episodes=1, target_reward=None)
    assert trainer.step == 250 and trainer.algorithm.updates == 250  # the last iteration stops at the budget

    code, _, err = run_cli(capsys, "collect", str(run), "--from-replay", "--epsilon", "0.1", "--out",
                           str(tmp_path / "x"))
    assert_one_line_error(code, err, "--from-replay takes a run directory and --out only", "drop --epsilon")
    code, _, err = run_cli(capsys, "collect", str(expert), "--from-replay", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, "kept no replay buffer")
    assert not (tmp_path / "x.json").exists()
    # --epsilon without a run (uniform random actions already) was silently ignored
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--epsilon", "0.5", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, "without a run directory every action is already random: drop --epsilon")
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------------------------------------- learning


def test_bc_clones_an_expert_on_cartpole(tmp_path, expert):
    agent = canter.load(expert)
    data = collect("CartPole-v1", 5000, agent, seed=3)
    assert data.info["mean_return"] >= 475
    data.save(tmp_path / "expert")
    best, trainer = best_eval("bc", dataset=str(tmp_path / "expert"), seed=0)  # the preset: 5,000 updates
    assert best >= 475
    assert trainer.env is None and trainer.step <= 5000 and trainer.step % 500 == 0  # steps are updates


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


# ---------------------------------------------------------------------------------------------- runs


def test_offline_run_resumes_exactly(tmp_path, expert, capsys):
    collect("CartPole-v1", 2000, canter.load(expert), epsilon=0.2, seed=4).save(tmp_path / "data")
    common = dict(dataset=str(tmp_path / "data"), seed=3, eval_every=400, gradient_steps=200, target_reward=None,
                  checkpoint_every=400, normalize_obs=True)
    whole = canter.train("cql", run_dir=tmp_path / "whole", max_steps=1200, **common)
    canter.train("cql", run_dir=tmp_path / "part", max_steps=800, **common)  # ends at an evaluation, as whole
    run = canter.api.resume_trainer(tmp_path / "part", max_steps=1200)
    for _ in run():
        pass
    run.close()
    resumed = run.agent
    assert run.trainer.resume_exact is True
    for a, b in zip(whole.algorithm.q.parameters(), resumed.algorithm.q.parameters()):
        assert torch.equal(a, b)
    np.testing.assert_array_equal(whole.obs_rms.mean, resumed.obs_rms.mean)
    evals = [json.loads((tmp_path / d / "summary.json").read_text())["last_eval_return"] for d in ("whole", "part")]
    assert evals[0] == evals[1]
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] == 1200

    # a dataset rewritten since the run started is refused (one line, exit 2) and the run is left as it was
    collect("CartPole-v1", 2000, None, seed=4).save(tmp_path / "other")
    for ext in (".safetensors", ".json"):
        (tmp_path / f"other{ext}").replace(tmp_path / f"data{ext}")
    before = snapshot(tmp_path / "part")
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "part"), "--max-steps", "1600", "--quiet")
    assert_one_line_error(code, err, "was rewritten since this run started")
    assert snapshot(tmp_path / "part") == before


def test_cli_collect_then_train_bc(tmp_path, expert, capsys):
    code, out, err = run_cli(capsys, "collect", str(expert), "--out", str(tmp_path / "data"), "--transitions", "3000",
                             "--seed", "2")
    assert code == 0, err
    assert "wrote 3,000 transitions of CartPole-v1" in out
    meta = json.loads((tmp_path / "data.json").read_text())
    assert meta["info"]["checkpoint"].endswith("best") and meta["info"]["algorithm"] == "ppo"
    code, out, err = run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data.safetensors"), "--quiet",
                             "--run-dir", str(tmp_path / "bc"))
    assert code == 0, err
    summary = json.loads((tmp_path / "bc" / "summary.json").read_text())
    assert summary["env"] == "CartPole-v1" and summary["solved"] and summary["algorithm"] == "bc"
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "bc"), "--episodes", "3", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 475

    from canter.tools.plot import draw_groups, group_runs, new_figure
    from canter.tools.rundata import load_run

    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([load_run(tmp_path / "bc")]))  # no training episodes: the evaluations
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("gradient updates", "mean evaluation return")
    assert len(ax.lines[0].get_xdata()) >= 1
    # the report says so too: its steps are gradient updates, not environment steps
    from canter.tools import report

    run = load_run(tmp_path / "bc")
    figures = []
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(report, "_img", lambda fig, alt: figures.append(fig) or "")
    try:
        report.learning_curve(run)
        report.throughput(run)
    finally:
        monkeypatch.undo()
    assert [f.axes[0].get_xlabel() for f in figures] == ["gradient updates"] * 2
    assert figures[1].axes[0].get_ylabel() == "updates / s" and "gradient updates (steps)" in report._cards(run)


@pytest.mark.parametrize("store", ["canter", "minari"])
def test_a_dataset_keeps_its_envs_kwargs_and_an_offline_run_evaluates_there(tmp_path, monkeypatch, store):
    """Data collected with env_kwargs (another reward, a shorter time limit) evaluate on that env, not
    on the id's default (the kwargs were dropped on save, Minari export and import)."""
    kwargs = {"sutton_barto_reward": True, "max_episode_steps": 10}
    data = collect("CartPole-v1", 300, None, seed=0, env_kwargs=kwargs)
    if store == "minari":
        pytest.importorskip("minari")
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
        data.to_minari("cartpole/kwargs-v0")
        path = "minari:cartpole/kwargs-v0"
    else:
        path = str(data.save(tmp_path / "data"))
    assert TransitionDataset.load(path).env_kwargs == kwargs
    trainer = canter.make_trainer("bc", None, dataset=path, max_steps=10, eval_every=10, eval_episodes=2)
    result = trainer.evaluate()
    trainer.close()
    assert trainer.run.env_kwargs == kwargs and max(result.lengths) <= 10 and max(result.returns) <= 0
    with pytest.raises(CanterError, match="collected with env_kwargs"):
        canter.make_trainer("bc", None, dataset=path, env_kwargs={"max_episode_steps": 50})


def test_minari_write_interrupted_by_ctrl_c_leaves_nothing(tmp_path, monkeypatch):
    """Writing a Minari dataset takes most of a collect's time (~40 s for 20k CartPole transitions): a Ctrl-C then
    left a half-written dataset that held no episode and blocked its id ('already exists')."""
    minari = pytest.importorskip("minari")
    from minari.storage import get_dataset_path

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    data = collect("CartPole-v1", 60, None, seed=0)
    real = minari.create_dataset_from_buffers

    def interrupted(dataset_id, buffers, **kwargs):
        (Path(get_dataset_path(dataset_id)) / "data" / "0").mkdir(parents=True)  # the first episode, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(minari, "create_dataset_from_buffers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.to_minari("cartpole/ctrl-c-v0")
    assert not list((tmp_path / "minari").rglob("*"))  # Minari's own (empty) datasets folder at most
    monkeypatch.setattr(minari, "create_dataset_from_buffers", real)
    assert data.to_minari("cartpole/ctrl-c-v0") > 0  # the id is free


def test_minari_dataset_loads_as_the_same_transitions(tmp_path, expert, monkeypatch, capsys):
    """A Minari dataset (the Farama standard: episodes of T + 1 observations) written from a canter
    dataset's complete episodes reads back as the same transitions, and trains like one."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    data = collect("CartPole-v1", 3000, canter.load(expert), epsilon=0.1, seed=6, info={"algorithm": "ppo"})
    ends = np.flatnonzero(data.terminated | data.truncated)
    data.to_minari("cartpole/test-v0")
    assert minari.load_dataset("cartpole/test-v0").total_episodes == len(ends)
    code, out, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--transitions", "500", "--out",
                             "minari:cartpole/random-v0")
    assert code == 0 and "to minari:cartpole/random-v0" in out, err
    written = int(out.split()[1].replace(",", ""))  # whole episodes: the last, cut short, is left out
    assert minari.load_dataset("cartpole/random-v0").total_steps == written < 500
    before = snapshot(tmp_path / "minari")
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--out", "minari:cartpole/random-v0")
    assert_one_line_error(code, err, "Minari dataset 'cartpole/random-v0' already exists")
    for out_id in ("minari:bad", "minari:", "minari:cartpole/"):
        code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--out", out_id)
        assert_one_line_error(code, err, "is not a Minari dataset id")
    code, _, err = run_cli(capsys, "collect", "--env", "pettingzoo:tests.match_agents", "--transitions", "64",
                           "--out", "minari:agents/random-v0")
    assert_one_line_error(code, err, "not registered with gymnasium", "--out PATH")
    assert snapshot(tmp_path / "minari") == before  # nothing half-written, for any of them
    with pytest.raises(CanterError, match="cannot write Minari dataset 'cartpole/test-v0'"):
        data.to_minari("cartpole/test-v0")  # never overwritten
    shuffled = TransitionDataset(*(getattr(data, k)[::-1] for k in ("obs", "actions", "rewards", "next_obs",
                                                                   "terminated", "truncated")),
                                 "CartPole-v1", data.observation_space, data.action_space)
    with pytest.raises(CanterError, match="not stored in episode order"):
        shuffled.to_minari("cartpole/shuffled-v0")
    back = TransitionDataset.load("minari:cartpole/test-v0")
    for name in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name)[: ends[-1] + 1])
    assert back.env_id == "CartPole-v1" and back.info["episodes"] == len(ends) and back.info["algorithm"] == "ppo"

    code, _, err = run_cli(capsys, "train", "bc", "--dataset", "minari:cartpole/test-v0", "--quiet", "--run-dir",
                           str(tmp_path / "bc"))
    assert code == 0, err
    assert json.loads((tmp_path / "bc" / "summary.json").read_text())["solved"]
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", "minari:cartpole/none-v0", "--quiet", "--run-dir",
                           str(tmp_path / "none"))
    assert_one_line_error(code, err, "no local Minari dataset 'cartpole/none-v0'", "minari download")
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("argv, needles", [
    (["train", "bc", "--env", "CartPole-v1", "--quiet"], ["bc learns from a dataset", "--dataset"]),
    (["train", "ppo", "--env", "CartPole-v1", "--dataset", "DATA", "--quiet"], ["only for offline", "bc, cql, td3bc"]),
    (["train", "bc", "--env", "Acrobot-v1", "--dataset", "DATA", "--quiet"], ["collected on CartPole-v1",
                                                                            "--env CartPole-v1"]),
    (["train", "td3bc", "--dataset", "DATA", "--quiet"], ["TD3BC needs a Box action space"]),
    (["train", "bc", "--dataset", "MISSING", "--quiet"], ["dataset not found"]),
    (["train", "bc", "--dataset", "DATA", "--explorers", "2", "--quiet"], ["takes no explorers"]),
    (["collect", "--out", "NEW"], ["--env ENV"]),
    (["collect", "--env", "CartPole-v1", "--out", "DATA"], ["already exists", "--out"]),
    (["collect", "--env", "CartPole-v1", "--out", "NEW", "--epsilon", "1.5"], ["--epsilon must be between 0 and 1"]),
    (["collect", "--env", "CartPole-v1", "--out", "NEW", "--transitions", "0"], ["--transitions must be >= 1"]),
    (["collect", "--env", "CartPol-v1", "--out", "NEW"], ["CartPole-v1"]),
    (["collect", "--env", "CartPole-v1", "--out", "NODIR/x"], ["does not exist"]),
    (["collect", "--env", "CartPole-v1", "--out", "DATAFILE/x"], ["is a file, not a directory"]),
    (["train", "bc", "--dataset", "DATA", "--set", "monitor=rolling", "--set", "early_stopping=2", "--quiet"],
     ["no rolling return", "monitor=eval"]),
    (["train", "bc", "--dataset", "DATA", "--set", "env_kwargs={sutton_barto_reward: true}", "--quiet"],
     ["collected with env_kwargs {}", "leave env_kwargs out"]),
    (["train", "bc", "--dataset", "minari:", "--quiet"], ["is not a Minari dataset id"]),
    (["collect", "--env", "CartPole-v1", "--out", "."], ["--out needs a file name"]),
    (["collect", "--env", "CartPole-v1", "--out", ""], ["--out needs a file name"]),
])
def test_offline_cli_errors_are_one_line_and_write_nothing(tmp_path, capsys, argv, needles):
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    before = snapshot(tmp_path)
    paths = {"DATA": str(tmp_path / "data"), "MISSING": str(tmp_path / "nope"), "NEW": str(tmp_path / "new"),
             "NODIR/x": str(tmp_path / "nodir" / "x"), "DATAFILE/x": str(tmp_path / "data.json" / "x")}
    code, _, err = run_cli(capsys, *[paths.get(a, a) for a in argv], *(["--run-dir", str(tmp_path / "run")]
                                                                      if argv[0] == "train" else []))
    assert_one_line_error(code, err, *needles)
    assert snapshot(tmp_path) == before  # no run directory, no dataset, the existing dataset untouched


def test_a_dataset_given_from_python_as_a_path_trains(tmp_path):
    """``canter.train("bc", dataset=Path(...))`` (run_dir takes a Path) was refused: "'dataset' must be a
    str or null, got PosixPath(...)", though the env was already read from that Path's dataset."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    agent = canter.train("bc", dataset=tmp_path / "data", max_steps=20, gradient_steps=10, eval_episodes=1,
                         run_dir=tmp_path / "run")
    assert agent.run_config.dataset == str(tmp_path / "data") and agent.run_config.env == "CartPole-v1"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 20


def test_an_offline_run_from_a_relative_dataset_path_resumes_from_another_directory(tmp_path, monkeypatch, capsys):
    """The run recorded --dataset as given (data/random), so canter train --resume RUN from any other working
    directory failed with 'dataset not found' (and --resume takes no --dataset); the resolved config holds the
    absolute path."""
    (tmp_path / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    collect("CartPole-v1", 200, None, seed=0).save("data")
    assert run_cli(capsys, "train", "bc", "--dataset", "data", "--max-steps", "20", "--set", "gradient_steps=10",
                   "--set", "eval_episodes=1", "--run-dir", "run", "--quiet")[0] == 0
    assert canter.load("run").run_config.dataset == str(tmp_path / "project" / "data")
    # the resolved config says so too (canter benchmark compares it with a finished run's config.yaml)
    assert resolve_config("bc", dataset="data")[0].dataset == str(tmp_path / "project" / "data")
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "project" / "run"), "--max-steps", "40",
                           "--quiet")
    assert code == 0, err
    assert json.loads((tmp_path / "project" / "run" / "summary.json").read_text())["steps"] == 40


def test_a_benchmark_of_a_dataset_with_env_kwargs_reuses_its_finished_runs(tmp_path, monkeypatch):
    """The dataset's env_kwargs became the run's only inside the trainer, so the resolved config said {}
    while config.yaml held them: running the same benchmark file again (which reuses finished runs) was
    refused with "was run with a different 'env_kwargs'"."""
    from canter.tools.benchmark import benchmark

    kwargs = {"is_slippery": False}
    collect("FrozenLake-v1", 300, None, seed=0, env_kwargs=kwargs).save(tmp_path / "data")
    assert resolve_config("bc", dataset=str(tmp_path / "data"))[0].env_kwargs == kwargs
    spec = tmp_path / "bench.yaml"
    spec.write_text(f"seeds: [0]\nenvs: [FrozenLake-v1]\nset: {{max_steps: 20, eval_episodes: 1}}\n"
                    f"algos:\n  bc: {{set: {{dataset: '{tmp_path / 'data'}', gradient_steps: 10}}}}\n")
    first = benchmark(spec, tmp_path / "out", quiet=True)
    again = benchmark(spec, tmp_path / "out", quiet=True)  # the finished run is reused
    assert first.rows == again.rows and len(first.rows) == 1


def test_a_dataset_whose_tensors_are_gone_is_named_as_a_dataset(tmp_path, capsys):
    """Only the JSON left (a half-copied dataset): the error said 'checkpoint tensors not found', for a new
    run and for resuming one, though no checkpoint was missing."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data"), "--max-steps", "100", "--quiet",
                   "--run-dir", str(run))[0] == 0
    (tmp_path / "data.safetensors").unlink()
    for argv in (["train", "bc", "--dataset", str(tmp_path / "data"), "--run-dir", str(tmp_path / "new")],
                 ["train", "--resume", str(run), "--max-steps", "200"]):
        before = snapshot(tmp_path)
        code, _, err = run_cli(capsys, *argv, "--quiet")
        assert_one_line_error(code, err, "dataset tensors not found", "data.safetensors", "data.json is there")
        assert snapshot(tmp_path) == before


def test_box_actions_outside_the_bounds_are_warned_about_once():
    """Actions beyond a Box's bounds were clipped into [-1, 1] without a word (a dataset scaled x3 trained as if fine)."""
    from canter.data.dataset import TransitionDataset
    from canter.errors import CanterWarning

    obs_space, act_space = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-2, 2, (1,), np.float32)
    n = 10
    obs = np.zeros((n, 3), np.float32)
    actions = np.linspace(-6, 6, n, dtype=np.float32).reshape(n, 1)
    with pytest.warns(CanterWarning, match="6 of 10 dataset actions lie outside the action space's bounds"):
        TransitionDataset(obs, actions, np.zeros(n, np.float32), obs, np.zeros(n, bool), np.zeros(n, bool),
                          "Pendulum-v1", obs_space, act_space)


def test_dataset_observation_statistics_never_copy_the_whole_dataset_to_float64():
    """normalize_obs concatenated obs and next_obs and cast them to float64 (8x a uint8 image dataset:
    226 GB for 1M Atari frames); the moments are now computed a chunk of rows at a time, as NumPy's."""
    import tracemalloc

    from canter.trainers.offline import dataset_obs_moments

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2000, 4, 16, 16), dtype=np.uint8)  # 2 MB; 16 MB as float64
    tracemalloc.start()
    mean, var, count = dataset_obs_moments((frames, frames[:500]), chunk_bytes=1 << 19)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 << 20, peak
    both = np.concatenate([frames, frames[:500]]).astype(np.float64)
    assert count == 2500
    np.testing.assert_allclose(mean, both.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, both.var(axis=0), rtol=1e-10)
