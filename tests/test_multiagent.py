"""PettingZoo parallel envs as vector envs: every agent a sub-env of one shared policy."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_env, make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from tests.test_cli_errors import assert_one_line_error, run_cli  # noqa: E402

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


def test_agents_that_leave_early_or_a_module_without_parallel_env_are_refused(capsys):
    env = make_vec_env(ENV, 1, env_kwargs={"leave_early": True})
    env.reset(seed=0)
    with pytest.raises(CanterError, match="some agents ended their episode before the others"):
        for _ in range(8):
            env.step(np.zeros(2, dtype=np.int64))
    env.close()
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:json", "--quiet")
    assert_one_line_error(code, err, "module 'json' has no parallel_env() factory")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:no_such_module_x", "--quiet")
    assert_one_line_error(code, err, "cannot import module 'no_such_module_x'")


def test_multiagent_run_resumes_exactly(tmp_path):
    common = dict(env_kwargs={"n_agents": 2}, n_envs=2, seed=5, eval_every=512, checkpoint_every=512, n_steps=64,
                  batch_size=64, n_epochs=2, target_reward=None)
    whole = canter.train("ppo", env=ENV, run_dir=tmp_path / "whole", max_steps=2048, **common)
    canter.train("ppo", env=ENV, run_dir=tmp_path / "part", max_steps=1024, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=2048)
    for a, b in zip(whole.algorithm.modules()["model"].parameters(), resumed.algorithm.modules()["model"].parameters()):
        assert torch.equal(a, b)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[0]["episodes"] == summaries[1]["episodes"]
    with pytest.raises(CanterError, match="multi-agent env: watching or recording it is not supported"):
        make_env(ENV)
