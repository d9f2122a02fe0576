"""PettingZoo parallel envs as vector envs: every agent a sub-env of one shared policy."""
from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_env, make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402
from tests.test_cli_errors import assert_one_line_error, assert_train_refused, run_cli  # noqa: E402

ENV = "pettingzoo:tests.match_agents"


def test_agents_of_every_copy_are_sub_envs_with_next_step_autoreset():
    env = make_vec_env(ENV, 2, env_kwargs={"n_agents": 3})
    assert env.num_envs == 6 and env.single_observation_space.shape == (3,) and env.single_action_space.n == 3
    obs = env.reset(seed=0)
    targets = obs.argmax(1)
    again = make_vec_env(ENV, 2, env_kwargs={"n_agents": 3})
    np.testing.assert_array_equal(again.reset(seed=0), obs)  # seeded, copy i with seed + i
    again.close()
    total = np.zeros(6)
    for t in range(8):
        step = env.step(targets)  # every agent matches its target: reward 1 each
        assert step.valid.all() and np.all(step.reward == 1.0)
        total += step.reward
        targets = step.obs.argmax(1)
    assert step.truncated.all() and not step.terminated.any()
    assert sorted(env.finished_returns.tolist()) == [8.0] * 6 and env.finished_lengths.tolist() == [8] * 6
    reset = env.step(targets)  # the reset-only step of NEXT_STEP autoreset
    assert not reset.valid.any() and np.all(reset.reward == 0)
    assert env.step(reset.obs.argmax(1)).valid.all()
    env.close()


HPARAMS = {"ppo": dict(n_envs=4, eval_every=2048, n_steps=64, batch_size=128, n_epochs=4),
           "dqn": dict(n_envs=2, eval_every=1000, learning_starts=500, exploration_fraction=0.3, train_freq=4,
                       gradient_steps=1, net_arch=[32], target_update_interval=200, lr=1e-3)}


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_shared_policy_learns_every_agents_task(algo, tmp_path, capsys):
    agent = canter.train(algo, env=ENV, env_kwargs={"n_agents": 2}, seed=0, max_steps=20_000, target_reward=7.5,
                         run_dir=tmp_path / "run", **HPARAMS[algo])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5  # random play earns 8/3 per agent
    obs = np.eye(3, dtype=np.float32)
    np.testing.assert_array_equal(agent.predict(obs), [0, 1, 2])
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "4", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 7.5, err


def test_agents_that_leave_early_are_masked_until_their_copy_resets():
    env = make_vec_env(ENV, 2, env_kwargs={"n_agents": 3, "miss_leaves": True})
    obs = env.reset(seed=0)
    targets = obs.argmax(1)
    miss = targets.copy()
    miss[1] = (miss[1] + 1) % 3  # copy 0's agent_1 misses and leaves
    miss[3:] = (miss[3:] + 1) % 3  # every agent of copy 1 misses: the copy's episode ends
    step = env.step(miss)
    assert step.valid.all() and step.terminated.tolist() == [False, True, False, True, True, True]
    assert step.reward.tolist() == [1, 0, 1, 0, 0, 0] and not step.truncated.any()
    assert env.finished_envs.tolist() == [1, 3, 4, 5] and env.finished_returns.tolist() == [0, 0, 0, 0]
    final = step.obs[1].copy()
    step = env.step(step.obs.argmax(1))  # the env refuses actions for departed agents: none reach it
    assert step.valid.tolist() == [True, False, True, False, False, False]  # departed; copy 1 resets
    assert step.reward.tolist() == [1, 0, 1, 0, 0, 0]
    np.testing.assert_array_equal(step.obs[1], final)  # a departed agent's row keeps its final observation
    for _ in range(6):  # copy 0's remaining agents play to the time limit; copy 1 plays a new episode
        step = env.step(step.obs.argmax(1))
        assert step.valid.tolist() == [True, False, True, True, True, True]
    assert step.truncated.tolist() == [True, False, True, False, False, False]
    assert sorted(env.finished_returns.tolist()) == [8.0, 8.0] and env.finished_lengths.tolist() == [8, 8]
    step = env.step(step.obs.argmax(1))
    assert step.valid.tolist() == [False, False, False, True, True, True]  # copy 0 resets, every agent back
    step = env.step(step.obs.argmax(1))
    assert step.valid.all() and step.truncated.tolist() == [False, False, False, True, True, True]
    assert env.finished_lengths.tolist() == [8, 8, 8]
    assert env.step(step.obs.argmax(1)).valid.tolist() == [True, True, True, False, False, False]
    env.close()


def test_an_agent_back_in_agents_after_it_left_is_refused():
    """PettingZoo never revives an agent; a revived one's rows stayed invalid, so everything it did after its
    return (actions, rewards, its episode) was dropped without a word."""
    env = make_vec_env(ENV, 1, env_kwargs={"n_agents": 2, "miss_leaves": True, "revive": True})
    miss = env.reset(seed=0).argmax(1)
    miss[1] = (miss[1] + 1) % 3  # agent_1 misses and leaves; the env puts it back in its agents
    assert env.step(miss).terminated.tolist() == [False, True]
    with pytest.raises(CanterError, match="agent 'agent_1' is in the agents of .* again after its episode ended"):
        env.step(miss)
    env.close()


@pytest.mark.parametrize("policies", ["shared", "agent"])
def test_an_observation_that_does_not_fit_names_its_agent_in_one_line(policies):
    """With several policies the env is stepped outside VecEnv.step, whose one-line error it missed: a
    ValueError traceback (exit code 1)."""
    env = make_vec_env(ENV, 1, policies=policies)
    env.reset(seed=0)
    game = env.env.envs[0]
    observe = game._observe
    game._observe = lambda: {**observe(), "agent_1": np.zeros(4, np.float32)}  # one entry too many
    actions = np.zeros(2, np.int64) if policies == "shared" else {p: np.zeros(1, np.int64) for p in env.policies}
    with pytest.raises(CanterError, match=r"agent 'agent_1' of .*does not fit its observation space Box\(shape=\(3,\)"):
        env.step(actions)
    env.close()


@pytest.mark.parametrize("policies", ["agent", "joint"])
def test_a_state_that_does_not_fit_the_state_space_is_one_line(policies):
    """A ValueError traceback with several policies; else a broadcast error blaming the observations."""
    env = make_vec_env(ENV, 1, policies=policies, central_state=policies != "joint")
    env.reset(seed=0)
    game = (env.env.inner if policies == "joint" else env.env).envs[0]
    game.state = lambda: np.zeros(7, np.float32)  # its state_space has 2 agents x 3
    actions = np.zeros((1, 2), np.int64) if policies == "joint" else {p: np.zeros(1, np.int64) for p in env.policies}
    with pytest.raises(CanterError, match=r"the state\(\) of .* has 7 values, but its state_space .* has 6"):
        env.step(actions)
    env.close()


def test_agent_ids_that_are_not_text_name_their_policies_as_text():
    """PettingZoo's agent IDs may be any hashable; with policies: agent | type integer IDs were a TypeError
    traceback (the policy names went through a regex); the env keeps its own IDs."""
    from canter.envs.multiagent import group_agents

    assert group_agents([0, 1], "agent") == group_agents([1, 0], "type") == {"0": [0], "1": [1]}


@pytest.mark.parametrize("algo", ["ppo", "qmix"])
def test_an_env_without_agents_is_one_line(algo, capsys, tmp_path):
    """env_kwargs that leave possible_agents empty: an IndexError traceback before."""
    assert_train_refused(capsys, tmp_path, ["train", algo, "--env", ENV, "--set", "env_kwargs={n_agents: 0}"],
                         "has no agents (its possible_agents is empty")


@pytest.mark.parametrize("mode", ["async", "native"])
def test_a_vectorization_a_parallel_env_cannot_use_is_refused(mode, capsys, tmp_path):
    """--vectorization async on a parallel PettingZoo env was recorded in config.yaml and silently
    stepped in-process."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--vectorization", mode],
                         f"vectorization '{mode}' does not apply; use sync (or auto)")


def test_a_module_without_parallel_env_is_refused(capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:json", "--quiet")
    assert_one_line_error(code, err, "module 'json' has neither a parallel_env() factory")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:no_such_module_x", "--quiet")
    assert_one_line_error(code, err, "cannot import module 'no_such_module_x'")


@pytest.mark.parametrize("algo,policies", [("ppo", "shared"), ("dqn", "agent")])
def test_agents_learn_to_stay_when_a_miss_ends_their_episode(algo, policies, tmp_path):
    """Random play earns about 0.5 of 8 per agent: a miss ends the agent's episode, not its copy's."""
    kwargs = {"n_agents": 2, "miss_leaves": True}
    agent = canter.train(algo, env=ENV, env_kwargs=kwargs, policies=policies, seed=0, max_steps=30_000,
                         target_reward=7.5, run_dir=tmp_path / "run", **HPARAMS[algo])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5
    lengths = pq.read_table(tmp_path / "run" / "history.parquet").column("episode_length").to_numpy()
    assert lengths.min() < 8  # training agents left early
    env = make_vec_env(ENV, 2, env_kwargs=kwargs, policies=policies)
    result = evaluate(agent, env, 8, seed=1)
    env.close()
    assert result.mean_return >= 7.5 and max(result.lengths) == 8  # the trained agents stay to the end


@pytest.mark.parametrize("miss_leaves", [False, True])
def test_multiagent_run_resumes_exactly(miss_leaves, tmp_path):
    common = dict(env_kwargs={"n_agents": 2, "miss_leaves": miss_leaves}, n_envs=2, seed=5, eval_every=512, checkpoint_every=512, n_steps=64,
                  batch_size=64, n_epochs=2, target_reward=None)
    whole = canter.train("ppo", env=ENV, run_dir=tmp_path / "whole", max_steps=2048, **common)
    canter.train("ppo", env=ENV, run_dir=tmp_path / "part", max_steps=1024, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=2048)
    for a, b in zip(whole.algorithm.modules()["model"].parameters(), resumed.algorithm.modules()["model"].parameters()):
        assert torch.equal(a, b)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[0]["episodes"] == summaries[1]["episodes"]
    with pytest.raises(CanterError, match="multi-agent env: it has no single-agent env to record"):
        make_env(ENV)


@pytest.mark.parametrize("policies", ["shared", "agent", "joint"])
def test_a_masked_env_is_snapshot_exactly_for_resume(policies):
    """Dict observations with action masks (packed per group) must not stop an exact resume."""
    from canter.envs.state import capture_env, restore_env

    kwargs = {"n_agents": 3, "masked": True, "miss_leaves": True}
    rng = np.random.default_rng(0)
    envs = [make_vec_env(ENV, 2, env_kwargs=kwargs, policies=policies) for _ in range(2)]
    obs = envs[0].reset(seed=4)
    envs[1].reset(seed=9)

    def actions(obs):  # an allowed action per agent (the mask is the last 3 columns of each row)
        def pick(rows):
            allowed = rows[..., -3:] > 0.5
            return np.where(allowed, rng.random(allowed.shape), -1).argmax(-1)
        return {p: pick(o) for p, o in obs.items()} if isinstance(obs, dict) else pick(
            obs[:, :-1] if policies == "joint" else obs)

    for _ in range(5):
        obs = envs[0].step(actions(obs)).obs
    state, problems = capture_env(envs[0])
    assert problems == []
    restore_env(envs[1], state)
    for _ in range(12):  # through departures and autoresets
        act = actions(obs)
        a, b = envs[0].step(act), envs[1].step(act)
        for x, y in ([(a.obs[p], b.obs[p]) for p in a.obs] if isinstance(a.obs, dict) else [(a.obs, b.obs)]):
            np.testing.assert_array_equal(x, y)
        obs = a.obs
    np.testing.assert_array_equal(envs[0].finished_returns, envs[1].finished_returns)
    for env in envs:
        env.close()


# -- several policies (policies: type | agent) -----------------------------------------------------
MIXED = "pettingzoo:tests.mixed_agents"


def test_policies_group_agents_by_type_with_their_own_spaces_and_rows():
    env = make_vec_env(MIXED, 2, policies="type", env_kwargs={"n_listeners": 2})
    assert env.policies == ["listener", "speaker"] and env.num_envs == 6
    assert env.single_observation_space["listener"].shape == (4,) and env.single_action_space["speaker"].n == 3
    obs = env.reset(seed=3)
    assert obs["listener"].shape == (4, 4) and obs["speaker"].shape == (2, 3)  # 2 copies x 2 listeners, x 1 speaker
    total = {"listener": np.zeros(4), "speaker": np.zeros(2)}
    for _ in range(8):  # every agent answers correctly: 1 per agent and step
        step = env.step({"listener": obs["listener"].argmax(1) % 2, "speaker": obs["speaker"].argmax(1)})
        for p in total:
            assert step.steps[p].valid.all() and np.all(step.steps[p].reward == 1.0)
            total[p] += step.steps[p].reward
        obs = step.obs
    assert step.steps["speaker"].truncated.all() and step.steps["listener"].truncated.all()
    assert env.finished_returns.tolist() == [8.0] * 6 and sorted(env.finished_envs.tolist()) == list(range(6))
    reset = env.step({"listener": np.zeros(4, np.int64), "speaker": np.zeros(2, np.int64)})
    assert not any(s.valid.any() for s in reset.steps.values()) and env.finished_envs.size == 0
    env.close()
    per_agent = make_vec_env(MIXED, 1, policies="agent")
    assert per_agent.policies == ["listener_0", "listener_1", "speaker_0"]
    per_agent.close()


class _ListenersRightSpeakerSilent:
    """Listeners answer correctly (8 per episode); the speaker names no target (0 per episode)."""

    def predict(self, obs):
        return {p: o.argmax(1) % 2 if p == "listener" else np.full(len(o), -1) for p, o in obs.items()}


@pytest.mark.parametrize("copies, episodes", [(5, 5), (5, 10), (4, 6)])
def test_evaluation_counts_every_agent_of_each_episode(copies, episodes):
    """An evaluation episode is a copy's episode, and every agent's return in it counts, so the mean
    averages over every agent (it counted sub-envs: the last rows, the speaker alone at 5 of 5)."""
    env = make_vec_env(MIXED, copies, policies="type")  # rows: the copies' listeners, then their speakers
    result = evaluate(_ListenersRightSpeakerSilent(), env, episodes, seed=0)
    env.close()
    assert sorted(result.returns) == [0.0] * episodes + [8.0] * (2 * episodes)
    assert result.mean_return == pytest.approx(16 / 3)
    assert result.episodes == episodes  # canter eval's 'over N episodes': it said 3 x episodes


class _FirstAgentRight:
    """agent_0 matches its target (8 per episode), agent_1 never acts validly (0 per episode)."""

    def predict(self, obs):
        actions = obs.argmax(1)
        actions[1::2] = -1  # rows are copy-major: agent_1 of every copy
        return actions


def test_shared_policy_evaluation_counts_every_agent_of_each_episode():
    env = make_vec_env(ENV, 3, env_kwargs={"n_agents": 2})
    result = evaluate(_FirstAgentRight(), env, 4, seed=0)  # 4 episodes over 3 copies of 2 agents
    env.close()
    assert sorted(result.returns) == [0.0] * 4 + [8.0] * 4
    assert result.episodes == 4


def test_policy_modes_are_checked(capsys):
    with pytest.raises(CanterError, match="pass --set policies=type"):
        make_vec_env(MIXED, 1)  # one shared policy for agents with different spaces
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "'policies: type' is for multi-agent envs")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", MIXED, "--set", "policies=team", "--quiet")
    assert_one_line_error(code, err, "policies")
    code, _, err = run_cli(capsys, "train", "impala", "--env", MIXED, "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "cannot train several policies")
    code, _, err = run_cli(capsys, "train", "ddpg", "--env", MIXED, "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "policy 'listener'")


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_one_policy_per_agent_type_learns_each_types_task(algo, tmp_path, capsys):
    """A speaker and two listeners with different spaces and tasks: random play earns 8/3 and 4 of 8."""
    agent = canter.train(algo, env=MIXED, policies="type", seed=1, max_steps=30_000, target_reward=7.5,
                         run_dir=tmp_path / "run", **HPARAMS[algo])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.5
    actions = agent.predict({"listener": np.eye(4, dtype=np.float32), "speaker": np.eye(3, dtype=np.float32)})
    np.testing.assert_array_equal(actions["listener"], [0, 1, 0, 1])
    np.testing.assert_array_equal(actions["speaker"], [0, 1, 2])
    loaded = canter.load(tmp_path / "run")  # a fresh agent from the checkpoint acts the same
    again = loaded.predict({"listener": np.eye(4, dtype=np.float32), "speaker": np.eye(3, dtype=np.float32)})
    assert all(np.array_equal(actions[p], again[p]) for p in actions)
    only = loaded.predict({"speaker": np.eye(3, dtype=np.float32)})  # one policy's actions
    assert list(only) == ["speaker"] and np.array_equal(only["speaker"], actions["speaker"])
    for bad, needle in (({"speakr": np.eye(3)}, "policies ['speakr']"), (np.eye(3), "got a ndarray")):
        with pytest.raises(CanterError, match=re.escape(needle)):
            loaded.predict(bad)
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "4", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 7.5, err
    updates = pq.read_table(next((tmp_path / "run").glob("updates*.parquet"))).column_names
    assert {c.split("/")[0] for c in updates if c.endswith("loss")} == {"listener", "speaker"}  # each one's losses
    assert {"listener/rolling_return", "speaker/rolling_return"} <= set(updates)
    for extra in ([], ["--from-replay"]):  # a dataset holds one policy's transitions
        code, _, err = run_cli(capsys, "collect", str(tmp_path / "run"), "--out", str(tmp_path / "data"), *extra)
        assert_one_line_error(code, err, "trained several policies (listener, speaker)")
    assert not list(tmp_path.glob("data*"))


def _interrupt_at(step):
    def after_update(trainer, losses):
        if trainer.step >= step and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"  # as Ctrl-C does: the run saves checkpoints/last and stops
    return after_update


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_run_of_several_policies_resumes_exactly(algo, tmp_path):
    common = dict(HPARAMS[algo], seed=5, eval_every=600, checkpoint_every=600, target_reward=None, policies="agent",
                  max_steps=2400)
    if algo == "dqn":  # each policy counts its own steps: learning starts well before the break, and with 4
        # listener rows (2 vector steps per update) against 2 speaker rows (3) the break falls mid-cycle
        common.update(learning_starts=100, train_freq=6, policies="type")
    whole = canter.train(algo, env=MIXED, run_dir=tmp_path / "whole", **common)
    canter.train(algo, env=MIXED, run_dir=tmp_path / "part", hooks={"after_update": _interrupt_at(1200)}, **common)
    part = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert part["stop_reason"] == "interrupted" and 1200 <= part["steps"] < 2400
    resumed = canter.resume(tmp_path / "part")
    assert resumed.policies == (["listener", "speaker"] if algo == "dqn" else ["listener_0", "listener_1", "speaker_0"])
    modules = [agent.algorithm.modules() for agent in (whole, resumed)]  # every policy's, "policy.name"
    assert sorted(modules[0]) == sorted(modules[1]) and len(modules[0]) >= 2
    for name, module in modules[0].items():
        for a, b in zip(module.parameters(), modules[1][name].parameters()):
            assert torch.equal(a, b), name
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True
    assert {k: summaries[0][k] for k in ("steps", "episodes", "updates", "best_eval_return")} == {
        k: summaries[1][k] for k in ("steps", "episodes", "updates", "best_eval_return")}


def test_learning_rate_control_reaches_every_policy_at_its_own_step():
    trainer = canter.make_trainer("ppo", env=MIXED, policies="type", seed=0, max_steps=6_000, lr_decay="linear",
                                  **HPARAMS["ppo"])
    records = trainer()
    next(records)
    members = trainer.members
    assert members["listener"].step == 2 * members["speaker"].step  # 2 listeners per copy, 1 speaker
    rates = {p: m.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] for p, m in members.items()}
    # each policy's budget is its share of max_steps, so both are the same fraction into their decay
    assert rates["listener"] == pytest.approx(rates["speaker"]) and rates["listener"] < HPARAMS["ppo"].get("lr", 3e-4)
    trainer.lr.reduce(0.5)  # what a plateau or a divergence restore does
    trainer.lr.apply(trainer.step)
    halved = {p: m.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] for p, m in members.items()}
    assert halved == pytest.approx({p: r / 2 for p, r in rates.items()})
    assert set(trainer.lr.current()) == {"listener.optimizer.0", "speaker.optimizer.0"}
    trainer.close()


def test_raising_max_steps_between_calls_stretches_every_policys_schedules():
    """A later call after raising ``trainer.run.max_steps`` continues (Trainer.__call__); each policy's
    budget is its share of the new budget, as a shared policy's is the whole (its linear learning rate
    was stuck at 0, the old share's end, for the rest of the run)."""
    trainer = canter.make_trainer("ppo", env=ENV, policies="agent", seed=0, max_steps=64, n_envs=1, n_steps=16,
                                  batch_size=32, n_epochs=1, lr_schedule="linear", eval_every=10**9, eval_episodes=1)
    for _ in trainer():
        pass
    rates = {p: m.algorithm.lr for p, m in trainer.members.items()}
    assert trainer.step == 64 and rates == {"agent_0": 0.0, "agent_1": 0.0}
    trainer.run.max_steps = 128
    next(trainer())  # one more rollout per policy: 48 of its 64 steps, a quarter of its initial rate left
    assert trainer.step == 96
    assert {p: m.algorithm.lr for p, m in trainer.members.items()} == pytest.approx(
        {"agent_0": 7.5e-5, "agent_1": 7.5e-5})
    trainer.close()


@pytest.mark.parametrize("env_id, policies", [(ENV, "shared"), (MIXED, "type")])
def test_reward_normalisation_tracks_one_return_per_agent(env_id, policies):
    """The discounted returns behind reward scaling are one per sub-env: 2 copies x 2 agents here,
    not one per copy (that mismatch crashed before)."""
    trainer = canter.make_trainer("ppo", env=env_id, policies=policies, n_envs=2, max_steps=512, normalize_reward=True,
                                  n_steps=64, batch_size=64, n_epochs=1, eval_every=0, eval_episodes=1)
    records = list(trainer())
    assert records[-1].step >= 512
    agents = [trainer.agent] if policies == "shared" else list(trainer.agent.agents.values())
    assert sorted(len(a._returns) for a in agents) == ([4] if policies == "shared" else [2, 4])
    trainer.close()


@pytest.mark.parametrize("algo, policies", [("ppo", "shared"), ("ppo", "agent"), ("dqn", "shared")])
def test_observation_statistics_skip_the_rows_of_agents_that_left(algo, policies):
    """``normalize_obs`` counts each real observation once, as in a single-agent env (whose every row
    counts, the final observation a reset-only step acts on included): a departed agent's rows, which
    repeat its final observation until its copy resets, are not observations (DQN: its random warm-up too)."""
    kwargs = dict(n_steps=8) if algo == "ppo" else dict(learning_starts=16, train_freq=4, batch_size=8)
    trainer = canter.make_trainer(algo, ENV, env_kwargs={"n_agents": 2, "miss_leaves": True}, policies=policies,
                                  seed=0, n_envs=1, max_steps=32, normalize_obs=True, eval_every=0, **kwargs)
    steps = []
    step = trainer.env.step
    trainer.env.step = lambda actions: steps.append(step(actions)) or steps[-1]
    list(trainer())
    # rows acted on: the reset's 2, then after each step but the last the agents that took part in it (their
    # next observation, a final one included) or 2 where the step reset the copy (every agent left before it)
    real, alive = 2, np.ones(2, bool)
    for s in steps[:-1]:
        s = s if policies == "shared" else [*s.steps.values()]
        valid = s.valid if policies == "shared" else np.concatenate([v.valid for v in s])
        done = (s.terminated | s.truncated) if policies == "shared" else np.concatenate(
            [v.terminated | v.truncated for v in s])
        alive = np.ones(2, bool) if not alive.any() else alive & ~done
        real += 2 if not valid.any() and alive.all() else int(valid.sum())
    agents = [trainer.agent] if policies == "shared" else list(trainer.agent.agents.values())
    counted = sum(a.obs_rms.count for a in agents) - 1e-4 * len(agents)
    assert real < 2 * len(steps)  # agents left early
    assert counted == pytest.approx(real)
    trainer.close()


@pytest.mark.parametrize("algo,policies", [("ppo", "shared"), ("dqn", "agent"), ("qmix", "joint")])
def test_play_records_one_copy_with_every_policy(algo, policies, tmp_path, capsys):
    """canter play on a multi-agent run: one env copy, its agents acting as in training; a video per episode."""
    extra = {"policies": policies} if policies != "joint" else {}
    canter.train(algo, env=ENV, env_kwargs={"n_agents": 2}, seed=0, max_steps=20_000, target_reward=7.5 if
                 algo != "qmix" else 15.0, run_dir=tmp_path / "run", **extra,
                 **(HPARAMS[algo] if algo in HPARAMS else {"n_envs": 4, "eval_every": 2_000}))
    code, out, err = run_cli(capsys, "play", str(tmp_path / "run"), "--episodes", "2", "--video-dir",
                             str(tmp_path / "vid"))
    assert code == 0, err
    returns = [float(line.split("return ")[1].split()[0]) for line in out.splitlines() if line.startswith("episode")]
    assert len(returns) == 2 and min(returns) >= (7.0 if algo != "qmix" else 14.0)  # per agent; QMIX: the team's
    videos = sorted(p.name for p in (tmp_path / "vid").iterdir())
    assert videos == ["play-episode-0.mp4", "play-episode-1.mp4"]
    assert all((tmp_path / "vid" / v).stat().st_size > 1000 for v in videos)


def test_policy_hparams_set_each_policys_own_hyperparameters(tmp_path):
    """policy_hparams over hparams, per policy: its own learning rate, network and rollout length,
    kept by canter.load (the checkpoint's networks have each policy's widths)."""
    overrides = {"agent_0": {"lr": 0.01, "net_arch": [16]}, "agent_1": {"n_steps": 32}}
    trainer = canter.make_trainer("ppo", ENV, env_kwargs={"n_agents": 2}, policies="agent", policy_hparams=overrides,
                                  seed=0, max_steps=2048, n_envs=2, n_steps=64, batch_size=64, eval_every=0,
                                  run_dir=tmp_path / "run")
    for _ in trainer():
        pass
    trainer.close()
    members = trainer.trainer.members  # make_trainer with a run_dir gives the Run wrapping the trainer
    cfg = {p: m.config for p, m in members.items()}
    assert (cfg["agent_0"].lr, cfg["agent_0"].net_arch, cfg["agent_0"].n_steps) == (0.01, [16], 64)
    assert (cfg["agent_1"].lr, cfg["agent_1"].net_arch, cfg["agent_1"].n_steps) == (3e-4, [64, 64], 32)
    assert members["agent_1"].buffer.n_steps == 32 and members["agent_0"].buffer.n_steps == 64
    loaded = canter.load(tmp_path / "run")
    widths = {p: [w.shape[-1] for w in a.algorithm.model.body.weights] for p, a in loaded.agents.items()}
    assert widths == {"agent_0": [16, 16], "agent_1": [64, 64, 64]}


@pytest.mark.parametrize("setting,needle", [
    ("{agent_9: {lr: 0.01}}", "unknown policy in policy_hparams 'agent_9'"),
    ("{agent_0: {lrr: 0.01}}", "policy_hparams.agent_0.lr"),
    ("{agent_0: {lr: -1}}", "policy_hparams.agent_0.lr"),
    ("{agent_0: 3}", "'policy_hparams.agent_0' must be a mapping"),
])
def test_bad_policy_hparams_are_one_line(setting, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--set", "policies=agent", "--set",
                                            f"policy_hparams={setting}"], needle)


def test_an_unknown_policy_among_many_says_what_the_policies_are(capsys, tmp_path):
    """With more than 12 policies and no close name the hint was "run 'canter list' to see them", which lists
    registered components, not an env's agents."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--env-kwargs", "{n_agents: 13}", "--set",
                                            "policies=agent", "--set", "policy_hparams={zqxjw: {lr: 0.01}}"],
                         "13 choices; the policies are the env's agents: agent_0, agent_1, ")


def test_a_policys_encoder_under_a_central_state_must_be_split(capsys, tmp_path):
    """hparams.encoder=flat is refused with central_state; a policy's own encoder was not (its actor then
    read the global state)."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set",
                                            "central_state=true", "--set", "encoder=split", "--set",
                                            "policy_hparams={speaker: {encoder: flat}}"],
                         "policy_hparams.speaker.encoder must be split")


def test_policy_hparams_need_several_policies(capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--set", "policy_hparams={agent_0: {lr: 1}}"],
                         "needs policies: type or agent")


def test_members_of_different_rollout_lengths_resume_exactly_mid_cycle(tmp_path):
    """agent_1 collects 48 steps per rollout, agent_0 64: at an iteration's end agent_1 is part-way
    through a rollout, whose rows the checkpoint must keep (they were lost: a short rollout padded
    with empty rows); a member's episodes are not kept twice (its own list grew for the whole run)."""
    def interrupt(trainer, losses):
        if trainer.step >= 256 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    common = dict(env_kwargs={"n_agents": 2}, policies="agent", seed=5, n_envs=2, n_steps=64, batch_size=64,
                  n_epochs=1, eval_every=0, max_steps=1024, quiet=True, policy_hparams={"agent_1": {"n_steps": 48}})
    whole = canter.train("ppo", env=ENV, run_dir=tmp_path / "whole", **common)
    canter.train("ppo", env=ENV, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    meta = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert meta["steps"] < 1024
    resumed = canter.resume(tmp_path / "part")
    for p in whole.agents:
        a, b = (x.agents[p].algorithm.modules()["model"].parameters() for x in (whole, resumed))
        assert all(torch.equal(x, y) for x, y in zip(a, b)), p
    summaries = [json.loads((tmp_path / r / "summary.json").read_text()) for r in ("whole", "part")]
    assert summaries[0]["updates"] == summaries[1]["updates"] and summaries[1]["resume_exact"] is True
    trainer = canter.make_trainer("ppo", ENV, **{k: v for k, v in common.items() if k != "quiet"})
    for _ in trainer():
        pass
    trainer.close()
    assert all(not m._pending for m in trainer.members.values())


def test_an_inexact_resume_drops_a_members_rollout_in_progress():
    """When the env's state could not be saved, the resumed run starts fresh episodes: a member's rollout
    in progress (agent_1: 48 steps per rollout against 64) must not continue across that reset (its
    last restored row, not done, bootstrapped GAE from the new episodes)."""
    common = dict(env_kwargs={"n_agents": 2}, policies="agent", seed=5, n_envs=2, n_steps=64, batch_size=64,
                  n_epochs=1, eval_every=0, max_steps=1024, policy_hparams={"agent_1": {"n_steps": 48}})
    trainer = canter.make_trainer("ppo", ENV, **common)
    next(iter(trainer()))  # one iteration: every member updated once; agent_1 is 16 steps into its next rollout
    state = trainer.resume_state()
    trainer.close()
    assert trainer.members["agent_1"].buffer.pos == 16
    state["env"] = None  # as for an env that cannot be snapshot (canter.envs.state)
    seen = {}

    def on_train_start(t):
        seen.update({p: (m.buffer.pos, m.collected) for p, m in t.members.items()}, exact=t.resume_exact)

    resumed = canter.make_trainer("ppo", ENV, hooks={"on_train_start": on_train_start}, **common)
    resumed.resume_from(state)
    next(iter(resumed()))
    resumed.close()
    assert seen == {"agent_0": (0, 0), "agent_1": (0, 0), "exact": False}


def test_a_members_divergence_names_its_policy_at_the_runs_step(monkeypatch):
    import tests.mixed_agents as mixed
    from canter.trainers.guard import TrainingDiverged

    step = mixed.MixedAgents.step

    def poisoned(self, actions):  # the speaker's reward is NaN on the 40th step
        obs, rew, term, trunc, info = step(self, actions)
        self.n = getattr(self, "n", 0) + 1
        if self.n == 40:
            rew = {a: float("nan") if a.startswith("speaker") else r for a, r in rew.items()}
        return obs, rew, term, trunc, info

    monkeypatch.setattr(mixed.MixedAgents, "step", poisoned)
    trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, batch_size=16, n_epochs=1,
                                  max_steps=400, eval_every=0, eval_episodes=1, target_reward=None)
    with pytest.raises(TrainingDiverged, match="policy 'speaker'") as err:
        for _ in trainer():
            pass
    trainer.close()
    assert err.value.step == sum(m.step for m in trainer.members.values())  # the run's count, not the speaker's


def test_a_restored_divergence_in_one_policys_update_leaves_every_policy_on_the_same_step():
    """The listener's update diverges (restored) on the step where both policies' rollouts end: the
    speaker, after it in the loop, used to miss that env step for good (its step 31 of the listener's 64, a
    transition from a stale observation next), and the run acted on the observations before it."""
    from canter.trainers.guard import Divergence

    trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, batch_size=16, n_epochs=1,
                                  max_steps=400, eval_every=0, eval_episodes=1, target_reward=None,
                                  divergence_guard="restore")
    listener = trainer.members["listener"].algorithm
    learn, calls = listener.learn, []

    def flaky(batch):
        calls.append(1)
        if len(calls) == 2:
            raise Divergence("gradient of listener.test", 0)
        return learn(batch)

    listener.learn = flaky
    records = trainer()
    for _ in range(3):
        next(records)
    members = trainer.members
    assert len(trainer.guard.events) == 1 and len(calls) == 3
    assert (members["listener"].step, members["speaker"].step, trainer.step) == (96, 48, 144)
    for policy, obs in zip(trainer.env.policies, trainer.env.env._outputs()):
        np.testing.assert_array_equal(trainer.obs[policy], obs)  # the run acts on the env's current observations
    trainer.close()


def test_a_list_of_seeds_seeds_each_copy_as_gymnasium_vector_envs_do():
    from canter.envs.multiagent import ParallelVectorEnv

    env = ParallelVectorEnv("pettingzoo:tests.match_agents", 2, {"n_agents": 2})
    by_list, _ = env.reset(seed=[5, 9])
    first = ParallelVectorEnv("pettingzoo:tests.match_agents", 1, {"n_agents": 2})
    second = ParallelVectorEnv("pettingzoo:tests.match_agents", 1, {"n_agents": 2})
    expected = np.concatenate([first.reset(seed=5)[0], second.reset(seed=9)[0]])
    assert np.array_equal(by_list, expected)
    assert not np.array_equal(env.reset(seed=[9, 5])[0], by_list)  # each copy got its own seed
    with pytest.raises(ValueError, match="3 seeds for 2 env copies"):
        env.reset(seed=[1, 2, 3])


@pytest.mark.parametrize("policies", ["shared", "type"])
def test_history_names_each_episodes_agent_and_policy(policies, tmp_path):
    """history.parquet had one row per agent and episode and no way to tell whose: a competitive env's
    per-agent returns were lost in the mix. A resumed run keeps the columns."""
    env = ENV if policies == "shared" else MIXED
    common = dict(seed=3, max_steps=1536, n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_every=0,
                  target_reward=None, policies=policies)
    run = tmp_path / "run"
    canter.train("ppo", env=env, run_dir=run, hooks={"after_update": _interrupt_at(700)}, **common)
    canter.resume(run)
    assert json.loads((run / "summary.json").read_text())["resume_exact"] is True
    table = pq.read_table(run / "history.parquet").to_pydict()
    possible = ["agent_0", "agent_1"] if policies == "shared" else ["speaker_0", "listener_0", "listener_1"]
    assert set(table["agent"]) == set(possible)
    counts = {a: table["agent"].count(a) for a in possible}
    assert len(set(counts.values())) == 1 and min(counts.values()) >= 10  # every agent's episodes end together
    if policies == "shared":
        assert "policy" not in table
    else:
        assert table["policy"] == [a.rsplit("_", 1)[0] for a in table["agent"]]  # policies: type -> speaker, listener
        speaker = [r for r, a in zip(table["episode_return"], table["agent"]) if a == "speaker_0"]
        assert all(0 <= r <= 8 for r in speaker)
