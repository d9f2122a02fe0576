"""QMIX: the joint multi-agent env view, the monotonic mixer, the TD target, learning and bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.algorithms.qmix import QMIX, QMIXConfig  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from support import assert_one_line_error, assert_train_refused, run_cli  # noqa: E402

ENV = "pettingzoo:tests.match_agents"


@pytest.mark.parametrize("state", [True, False])
def test_joint_env_stacks_agents_and_state_and_sums_the_team_reward(state):
    env = make_vec_env(ENV, 2, policies="joint", env_kwargs={"n_agents": 3, "state": state})
    # 3 agents + state, width 3 * 3, then the agents' alive masks (the env has no action masks: 3 columns)
    assert env.num_envs == 2 and env.single_observation_space.shape == (4, 12)
    assert env.single_action_space.nvec.tolist() == [3, 3, 3]
    obs = env.reset(seed=0)
    agents = obs[:, :3, :3]
    assert np.all(agents.sum(-1) == 1) and np.all(obs[:, :3, 3:9] == 0)  # one-hot targets, zero padding
    assert np.all(obs[:, :3, 9:] == 1) and np.all(obs[:, 3, 9:] == 0)  # every agent in: every action allowed
    np.testing.assert_array_equal(obs[:, 3, :9], agents.reshape(2, 9))  # the state (or the fallback) holds every target
    targets = agents.argmax(-1)
    wrong = (targets + 1) % 3
    step = env.step(np.stack([targets[0], wrong[1]]))  # copy 0: all match; copy 1: none
    assert step.reward.tolist() == [3.0, 0.0] and step.valid.all()
    for _ in range(7):
        step = env.step(step.obs[:, :3, :3].argmax(-1))
    assert step.truncated.all() and not step.terminated.any() and env.finished_lengths.tolist() == [8, 8]
    assert np.all(step.obs[:, :3, :3].sum(-1) == 1)  # the time limit's bootstrap sees the final observations
    assert env.finished_returns.tolist() == [24.0, 21.0]
    assert not env.step(np.zeros((2, 3), np.int64)).valid.any()  # NEXT_STEP autoreset
    env.close()


def test_joint_env_zeroes_departed_agents_after_their_last_step_and_ends_a_copy_when_every_agent_has():
    env = make_vec_env(ENV, 2, policies="joint", env_kwargs={"n_agents": 3, "miss_leaves": True})
    obs = env.reset(seed=0)
    actions = obs[:, :3, :3].argmax(-1)
    actions[0, 1] = (actions[0, 1] + 1) % 3  # copy 0's agent_1 misses and leaves
    actions[1] = (actions[1] + 1) % 3  # every agent of copy 1 misses
    step = env.step(actions)
    assert step.reward.tolist() == [2.0, 0.0] and step.terminated.tolist() == [False, True]
    assert not step.truncated.any() and env.finished_envs.tolist() == [1]
    assert np.all(step.obs[:, :3, :3].sum(-1) == 1)  # the step an agent leaves in shows its final observation
    assert np.all(step.obs[0, 3, 3:6] == 0)  # the env's state() leaves it out
    step = env.step(step.obs[:, :3, :3].argmax(-1))
    assert np.all(step.obs[0, 1, :9] == 0) and np.all(step.obs[0, [0, 2], :3].sum(-1) == 1)  # zeros from the next step
    assert step.obs[0, 1, 9:].tolist() == [1, 0, 0] and np.all(step.obs[0, [0, 2], 9:] == 1)  # out: action 0 alone
    for _ in range(6):  # the departed agent's actions never reach the env (it refuses them)
        step = env.step(step.obs[:, :3, :3].argmax(-1))
        assert np.all(step.obs[0, 1, :9] == 0) and step.obs[0, 1, 9:].tolist() == [1, 0, 0]
    assert step.truncated.tolist() == [True, False] and not step.terminated.any()  # the survivors' time limit
    assert env.finished_returns.tolist() == [16.0] and env.finished_lengths.tolist() == [8]
    assert step.valid.tolist() == [True, True] and not env.step(np.zeros((2, 3), np.int64)).valid[0]
    env.close()


def test_a_time_limit_on_the_last_step_truncates_the_team_episode_even_where_an_agent_terminates():
    env = make_vec_env(ENV, 1, policies="joint", env_kwargs={"n_agents": 2, "miss_leaves": True})
    obs = env.reset(seed=0)
    for t in range(8):  # match_agents' time limit is 8 steps
        actions = obs[:, :2, :3].argmax(-1)
        if t == 7:
            actions[0, 0] = (actions[0, 0] + 1) % 3  # agent_0 misses (its episode terminates) at the time limit
        step = env.step(actions)
        obs = step.obs
    assert step.truncated.tolist() == [True] and step.terminated.tolist() == [False]
    env.close()


def test_mixing_is_monotonic_in_every_agents_value():
    env = make_vec_env(ENV, 1, policies="joint", env_kwargs={"n_agents": 3})
    algo = QMIX(env.single_observation_space, env.single_action_space, QMIXConfig(), seed=0)
    env.close()
    torch.manual_seed(0)
    obs = torch.randn(64, 4, 12)
    chosen = torch.randn(64, 3, requires_grad=True)
    algo.q.mix(chosen, obs).sum().backward()
    assert (chosen.grad >= 0).all() and (chosen.grad > 0).any()


def test_td_target_bootstraps_from_the_target_mixer_with_double_q():
    env = make_vec_env(ENV, 1, policies="joint", env_kwargs={"n_agents": 2})
    algo = QMIX(env.single_observation_space, env.single_action_space, QMIXConfig(gamma=0.9), seed=0)
    env.close()
    torch.manual_seed(1)
    b = 6
    next_obs = torch.rand(b, 3, 9)  # width 6, then the alive masks: every action allowed
    next_obs[:, :2, 6:] = 1.0
    with torch.no_grad():
        algo.q.agent.__getitem__(0).weight.add_(0.5)  # online and target networks now differ
    batch = ReplayBatch(torch.rand(b, 3, 9), torch.zeros(b, 2, dtype=torch.int64), torch.arange(b, dtype=torch.float32),
                        next_obs, torch.tensor([0, 1, 0, 1, 0, 1], dtype=torch.float32), torch.full((b,), 0.9),
                        torch.ones(b), torch.arange(b))
    with torch.no_grad():
        pick = algo.q.agent_q(next_obs).argmax(-1)  # the online network picks each agent's next action
        values = algo.q_target.agent_q(next_obs).gather(2, pick.unsqueeze(2)).squeeze(2)
        expected = batch.rewards + 0.9 * (1 - batch.terminated) * algo.q_target.mix(values, next_obs)
    torch.testing.assert_close(algo.td_target(batch), expected)
    assert torch.equal(algo.td_target(batch)[1::2], batch.rewards[1::2])  # terminated: the reward alone


def test_qmix_learns_a_team_reward_that_needs_every_agent(tmp_path, capsys):
    """Every agent earns 1 only when all three match their targets: random play earns 8/27 per agent
    and episode, so the team (the sum over agents) 0.9 of 24."""
    agent = canter.train("qmix", env=ENV, env_kwargs={"n_agents": 3, "team": True}, seed=0, max_steps=30_000,
                         target_reward=23, n_envs=4, eval_every=2_000, run_dir=tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 23
    obs = np.zeros((3, 4, 12), np.float32)
    obs[:, :3, 9:] = 1.0  # every agent in: every action allowed
    for j in range(3):  # every agent sees target j
        obs[j, :3, j] = 1.0
    np.testing.assert_array_equal(agent.predict(obs), [[0, 0, 0], [1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(canter.load(tmp_path / "run").predict(obs), agent.predict(obs))
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "4", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 23, err


def test_qmix_run_resumes_exactly(tmp_path, capsys):
    common = dict(env_kwargs={"n_agents": 2, "team": True}, n_envs=2, seed=3, max_steps=3_000, eval_every=1_000,
                  checkpoint_every=1_000, learning_starts=200, target_reward=None)
    whole = canter.train("qmix", env=ENV, run_dir=tmp_path / "whole", **common)

    def interrupt(trainer, losses):
        if trainer.step >= 1_500 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("qmix", env=ENV, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    resumed = canter.resume(tmp_path / "part")
    for a, b in zip(whole.algorithm.q.parameters(), resumed.algorithm.q.parameters()):
        assert torch.equal(a, b)
    s = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert s[1]["resume_exact"] is True and s[0]["episodes"] == s[1]["episodes"] and s[0]["updates"] == s[1]["updates"]
    # a dataset holds one agent's transitions: a joint run's policy or replay is refused in one line
    for extra in ([], ["--from-replay"]):
        code, _, err = run_cli(capsys, "collect", str(tmp_path / "whole"), *extra, "--out", str(tmp_path / "data"))
        assert_one_line_error(code, err, "policies: joint")
    assert not list(tmp_path.glob("data*"))


@pytest.mark.parametrize("argv, needle", [
    (["train", "qmix", "--env", "CartPole-v1"], "QMIX needs a multi-agent env"),
    (["train", "qmix", "--env", "pettingzoo:tests.mixed_agents"], "joint control (qmix) needs one"),
    (["train", "qmix", "--env", ENV, "--set", "policies=type"], "qmix controls every agent jointly"),
    (["train", "dqn", "--env", ENV, "--set", "policies=joint"], "'policies: joint' is for algorithms"),
    (["train", "qmix", "--env", ENV, "--explorers", "2"], "qmix runs in one process"),
    # the error named 'policies: joint', which qmix sets itself, for the user to drop
    (["train", "qmix", "--env", "pettingzoo:pettingzoo.classic.tictactoe_v3"],
     "is a turn-based game (train dqn or ppo"),
    # the error named the masked Box observations as wrong too ('not MaskedBox and MultiDiscrete')
    (["train", "qmix", "--env", ENV, "--env-kwargs", "{masked: true, factored: true}"],
     "needs Box observations and Discrete actions; its agents act in MultiDiscrete([3, 2])"),
    # Discrete observations (rps_v2) were refused without naming what to train instead
    (["train", "qmix", "--env", "pettingzoo:pettingzoo.classic.rps_v2"], "observe Discrete(4); train dqn or ppo"),
    # images reached QMIX's fully connected agent network and hypernetworks as raw pixels
    (["train", "qmix", "--env", ENV, "--env-kwargs", "{image_obs: true}", "--max-steps", "64"], "observes images"),
    (["train", "qmix", "--env", ENV, "--env-kwargs", "{image_state: true}", "--max-steps", "64"],
     "its state() is an image"),
])
def test_qmix_bad_input_is_one_line(argv, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, argv, needle)



def test_masked_actions_stay_below_allowed_q_values_far_below_the_mask_value():
    """Masked actions' Q values were a fixed -1e8 (MASKED): with every allowed value below it the greedy
    action, and the target's greedy next action, was a disallowed one (DQN's models already set them
    below their row's lowest value)."""
    env = make_vec_env(ENV, 1, policies="joint", env_kwargs={"n_agents": 2, "masked": True})
    algo = QMIX(env.single_observation_space, env.single_action_space, QMIXConfig(double_q=False), seed=0)
    env.close()
    for q in (algo.q, algo.q_target):
        with torch.no_grad():
            last = q.agent[-1] if isinstance(q.agent[-1], torch.nn.Linear) else q.agent[-2]
            last.weight.zero_()
            last.bias.copy_(torch.tensor([-3e8, -2e8, -4e8]))
    obs = torch.zeros(4, 3, 9)
    obs[:, :2, 6 + 2] = 1.0  # both agents: only action 2 (the lowest value) is allowed
    assert algo.act(obs, deterministic=True).actions.tolist() == [[2, 2]] * 4
    ones = torch.ones(4)
    batch = ReplayBatch(obs, torch.full((4, 2), 2), ones * 0, obs, ones * 0, ones * 0.9, ones, torch.arange(4))
    with torch.no_grad():
        expected = 0.9 * algo.q_target.mix(torch.full((4, 2), -4e8), obs)
    torch.testing.assert_close(algo.td_target(batch), expected)
