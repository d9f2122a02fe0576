"""A random policy (``policy_hparams.<policy>.algo: random``) in a run with a centralised critic (``central_state``,
MAPPO): it acts on its agents' own rows of the ``[2, w]`` observations, under their action masks. It was refused."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.agents.fixed import RandomPolicy  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from support import run_cli  # noqa: E402

MATCH = "pettingzoo:tests.match_agents"
MASKED = {"n_agents": 2, "masked": True}


def test_a_random_policy_draws_from_the_mask_in_its_own_row_of_a_central_observation():
    """The mask is the last columns of the first row; the second row (the global state, the agent's one-hot index,
    zeros under the mask's columns) is not a mask: read as one, every action was drawn (or the actions' shape was
    ``[B, 2]``)."""
    env = make_vec_env(MATCH, 2, env_kwargs=MASKED, policies="agent", central_state=True)
    space = env.single_observation_space["agent_1"]
    obs = env.reset(seed=0)["agent_1"]
    env.close()
    assert obs.shape == (2, *space.shape) and space.shape[0] == 2
    policy = RandomPolicy(space, env.single_action_space["agent_1"], seed=0, central=True)
    rows = np.repeat(obs[:1], 200, axis=0)
    rows[:, 0, -3:] = [0, 0, 1]  # only action 2 allowed
    assert set(policy.explore(rows).tolist()) == {2} and set(policy.predict(rows).tolist()) == {2}
    assert policy.predict(rows[0]).shape == ()  # one observation: one action
    rows[:, 0, -3:] = [1, 0, 1]
    assert set(policy.explore(rows).tolist()) == {0, 2}


def test_mappo_trains_evaluates_and_plays_beside_a_random_policy(tmp_path, capsys):
    """tests/match_agents.py raises on a masked action; its mask allows the target and one other, so the random agent
    earns about 4 of 8."""
    run = tmp_path / "run"
    agent = canter.train("mappo", env=MATCH, env_kwargs=MASKED, policies="agent", seed=0, max_steps=768,
                         target_reward=None, run_dir=run, policy_hparams={"agent_1": {"algo": "random"}}, n_envs=2,
                         n_steps=64, batch_size=64, n_epochs=1, eval_every=384, quiet=True)
    assert isinstance(agent.agents["agent_1"], RandomPolicy)
    code, out, err = run_cli(capsys, "eval", str(run), "--episodes", "4", "--json")
    assert code == 0, err
    assert 0 <= json.loads(out)["mean_return"] <= 8
    code, out, err = run_cli(capsys, "play", str(run), "--episodes", "1")
    assert code == 0, err
    history = pq.read_table(run / "history.parquet").to_pydict()
    random_returns = [r for r, a in zip(history["episode_return"], history["agent"]) if a == "agent_1"]
    assert len(random_returns) >= 20 and 2.5 <= np.mean(random_returns) <= 5.5
