"""Offline datasets from replay buffers and from a trained PPO expert (one module-scoped run): the
round trip, replay buffers as datasets, BC cloning the expert, an exact resume, ``canter collect`` and Minari."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import canter
from canter.api import make_agent
from canter.config import resolve_config
from canter.checkpoint import load_checkpoint
from canter.data.dataset import TransitionDataset, collect, from_replay
from canter.errors import CanterError
from support import assert_one_line_error, best_eval, run_cli, snapshot


@pytest.fixture(scope="module")
def expert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PPO run that solved CartPole (the preset, seed 1)."""
    run_dir = tmp_path_factory.mktemp("expert") / "ppo"
    agent = canter.train("ppo", env="CartPole-v1", target_reward=475, seed=1, run_dir=run_dir)
    assert json.loads((run_dir / "summary.json").read_text())["solved"]
    return agent.run_dir


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
    with pytest.raises(CanterError, match="actions have shape"):  # (a flat [N] of one-value actions is taken)
        TransitionDataset(data.obs, np.repeat(data.actions, 2, axis=1), data.rewards, data.next_obs, data.terminated,
                          data.truncated, "Pendulum-v1", data.observation_space, data.action_space)



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


@pytest.mark.parametrize("steps, kept", [(14, list(range(5, 9)) + list(range(10, 14))), (16, list(range(10, 14)))])
def test_replay_keeps_the_oldest_episode_where_the_ring_still_holds_its_start(steps, kept):
    """A wrapped ring whose oldest row is the reset-only row before an episode holds that episode whole: it was
    left out as one whose start the ring overwrote (a TD3 Pendulum run, 2 envs, buffer_size 800, 1,200 steps:
    'holds no complete episode', though each env's ring held a whole 200-step one). An episode whose first rows
    were overwritten is still left out. Episodes of 4 transitions, then a reset-only row; obs = the step."""
    from canter.data.dataset_replay import _whole_episodes
    from canter.data.replay import ReplayBuffer

    buffer = ReplayBuffer(10, (1,), (), n_envs=1)  # 11 rows, the head included: the last 10 steps are held
    for s in range(steps):
        valid, end = s % 5 != 4, s % 5 == 3
        buffer.add(np.array([[s]], np.float32), np.zeros(1), np.ones(1), np.array([[s + 1]], np.float32),
                   np.array([end]), valid=np.array([valid]))
    assert buffer.full
    idx = _whole_episodes(buffer.chronological_indices(), buffer)
    assert buffer.obs.reshape(-1)[idx].astype(int).tolist() == kept


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


def test_from_replay_takes_the_checkpoints_folder_or_a_checkpoint_path(tmp_path, capsys):
    """canter collect takes a run directory or a checkpoint; with --from-replay a checkpoint path (or the
    checkpoints folder) read '<path>/checkpoints/last' and failed with 'checkpoint not found:
    runs/x/checkpoints/last/checkpoints/last.json'. They now name the checkpoint whose buffer is read, and one
    that keeps none (best) says that only checkpoints/last does."""
    run = tmp_path / "dqn"
    canter.train("dqn", env="CartPole-v1", run_dir=run, seed=0, max_steps=300, learning_starts=50, train_freq=4,
                 gradient_steps=1, net_arch=[16], eval_every=0, eval_episodes=1)
    whole = from_replay(run)
    for given in (run / "checkpoints", run / "checkpoints" / "last", run / "checkpoints" / "last.json"):
        np.testing.assert_array_equal(from_replay(given).obs, whole.obs)
    code, _, err = run_cli(capsys, "collect", str(run / "checkpoints" / "best"), "--from-replay", "--out",
                           str(tmp_path / "x"))
    assert_one_line_error(code, err, "holds no replay buffer", "checkpoints/last")
    assert not (tmp_path / "x.json").exists()
