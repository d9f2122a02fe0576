"""Multi-agent learning on the PettingZoo test envs: one shared policy, and one policy per agent type."""
from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402
from support import ENV, HPARAMS, MIXED, assert_one_line_error, run_cli  # noqa: E402


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
