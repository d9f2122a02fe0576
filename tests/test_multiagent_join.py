"""Agents that join a PettingZoo parallel env's episode after its reset, and agents that leave and rejoin
(respawn): absent rows masked as departed agents' are, a joiner's first observation the start of its
trajectory, its learning data only the steps it acted in (env ``tests/late_agents.py``)."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402

LATE = "pettingzoo:tests.late_agents"


def test_a_joiner_is_absent_until_it_joins_and_its_first_observation_starts_its_trajectory():
    """Refused before (every possible agent had to be present after reset). The join step is not the
    joiner's (its reward of 100 there followed no action of its own), its observation is real from then on."""
    env = make_vec_env(LATE, 2, env_kwargs={"join_at": 3})
    obs = env.reset(seed=0)
    assert env.observed.tolist() == [True, False, True, False]  # the joiners' rows: placeholders, not observed
    np.testing.assert_array_equal(obs[[1, 3]], 0)
    valid, rewards = [], []
    for _ in range(9):
        step = env.step(obs.argmax(1))  # every present agent matches its target
        valid.append(step.valid.tolist())
        rewards.append(step.reward.tolist())
        if len(valid) == 3:  # agent_1 joined: its first observation, a real one, no transition into it
            assert env.observed is None and step.obs[[1, 3]].sum(1).tolist() == [1, 1]
            assert step.valid.tolist() == [True, False, True, False] and step.reward.tolist() == [1, 0, 1, 0]
        if len(valid) == 8:
            assert step.truncated.all() and env.finished_returns.tolist() == [8, 5, 8, 5]
            assert env.finished_lengths.tolist() == [8, 5, 8, 5]
        obs = step.obs
    assert [v[1] for v in valid] == [False] * 3 + [True] * 5 + [False]  # it acted on steps 4 to 8
    assert sum(r[1] for r in rewards) == 5
    assert env.observed.tolist() == [True, False, True, False]  # the reset step: absent again
    env.close()
    env = make_vec_env(LATE, 2, policies="agent")  # each policy's rows
    env.reset(seed=0)
    assert env.views[0].observed is None and env.views[1].observed.tolist() == [False, False]
    env.close()


def test_a_respawned_agent_starts_a_new_episode_after_a_step_away():
    env = make_vec_env(LATE, 1, env_kwargs={"join_at": 1, "respawn": True})
    obs = env.reset(seed=0)
    step = env.step(obs.argmax(1))  # agent_1 joins
    miss = step.obs.argmax(1)
    miss[1] = (miss[1] + 1) % 3
    step = env.step(miss)  # agent_1 misses: terminated, its episode (one step, return 0) ends
    assert step.terminated.tolist() == [False, True] and step.valid.all()
    assert env.finished_envs.tolist() == [1] and env.finished_lengths.tolist() == [1]
    step = env.step(step.obs.argmax(1))  # away this step, back in the agents it returns
    assert step.valid.tolist() == [True, False] and env.observed is None
    for _ in range(5):
        step = env.step(step.obs.argmax(1))
        assert step.valid.all()
    assert step.truncated.all() and env.finished_returns.tolist() == [8, 5]
    env.close()


def test_an_agent_that_is_not_a_possible_agent_is_refused_in_one_line():
    env = make_vec_env(LATE, 1)
    obs = env.reset(seed=0)
    env.env.agents = ["agent_0"]  # as canter would see an env whose possible_agents lack agent_1
    env.env._where.pop("agent_1")
    for _ in range(2):
        obs = env.step(obs.argmax(1)).obs
    with pytest.raises(CanterError, match="agent 'agent_1' joined .* not one of its possible_agents"):
        env.step(obs.argmax(1))
    env.close()


def test_a_joiner_without_an_observation_and_a_reset_without_agents_are_refused_in_one_line():
    env = make_vec_env(LATE, 1, env_kwargs={"join_at": 1})
    obs = env.reset(seed=0)
    game = env.env.envs[0]
    observe = game._observe
    game._observe = lambda: {a: o for a, o in observe().items() if a != "agent_1"}
    with pytest.raises(CanterError, match=r"agents \['agent_1'\] of .* are in its agents after a step but have no "
                                          r"observation"):
        env.step(obs.argmax(1))
    game.reset = lambda seed=None, options=None: (setattr(game, "agents", []), ({}, {}))[1]
    with pytest.raises(CanterError, match=r"has agents \[\] after reset; canter needs at least one"):
        env.reset(seed=0)
    env.close()


def _acted_steps(vector_steps: int, join_at: int = 3) -> int:
    """agent_1's transitions in ``vector_steps`` steps of one copy: 9 per episode (8 and the reset step), it acts
    on steps ``join_at + 1`` to 8."""
    full, rest = divmod(vector_steps, 9)
    return full * (8 - join_at) + max(0, min(rest, 8) - join_at)


def test_a_joiners_replay_holds_exactly_the_transitions_it_acted_in():
    trainer = canter.make_trainer("dqn", LATE, policies="agent", seed=0, n_envs=2, max_steps=400,
                                  learning_starts=10_000, eval_every=0)
    for _ in trainer():
        pass
    trainer.close()
    buffer = trainer.members["agent_1"].buffer
    rows = buffer.pos  # the head row: no wrap at this size
    assert len(buffer) == 2 * _acted_steps(rows)
    valid = buffer.valid[:rows]
    assert np.all(buffer.obs[:rows][valid].sum(-1) == 1)  # one-hot targets: no placeholder of zeros
    assert np.all(buffer.obs[1:rows + 1][valid].sum(-1) == 1)  # next observations too
    assert set(np.unique(buffer.rewards[:rows][valid])) <= {0.0, 1.0}  # no join reward


def test_a_joiners_rollouts_hold_exactly_the_transitions_it_acted_in(monkeypatch):
    from canter.agents.agent import Agent

    batches = []
    learn = Agent.learn

    def spy(self, batch):
        batches.append((self, batch.obs.clone()))
        return learn(self, batch)

    monkeypatch.setattr(Agent, "learn", spy)
    trainer = canter.make_trainer("ppo", LATE, policies="agent", seed=0, n_envs=2, n_steps=36, batch_size=36,
                                  n_epochs=1, max_steps=288, eval_every=0)
    for _ in trainer():
        pass
    trainer.close()
    joiner = [obs for agent, obs in batches if agent is trainer.agent.agents["agent_1"]]
    assert [len(obs) for obs in joiner] == [2 * _acted_steps(36), 2 * (_acted_steps(72) - _acted_steps(36))]
    assert all(torch.all(obs.sum(-1) == 1) for obs in joiner)


@pytest.mark.parametrize("algo", ["ppo", pytest.param("dqn", marks=pytest.mark.slow)])  # dqn: 2 to 3 s here
def test_a_joiner_learns_its_task(algo, tmp_path, capsys):
    """Random play earns 5/3 of agent_1's best 5 and 8/3 of agent_0's 8."""
    hp = dict(n_envs=4, n_steps=64, batch_size=128, n_epochs=4) if algo == "ppo" else dict(
        n_envs=2, learning_starts=300, exploration_fraction=0.3, train_freq=4, net_arch=[32],
        target_update_interval=200, lr=1e-3)
    agent = canter.train(algo, env=LATE, policies="agent", seed=0, max_steps=6000, eval_every=0,
                         run_dir=tmp_path / "run", **hp)
    env = make_vec_env(LATE, 2, policies="agent")
    result = evaluate(agent, env, 4, seed=1)
    env.close()
    assert result.episodes == 4 and len(result.returns) == 8  # one return per agent and episode
    assert sorted(result.returns)[:4] == [5.0] * 4 and sorted(result.returns)[4:] == [8.0] * 4
    history = pq.read_table(tmp_path / "run" / "history.parquet").to_pydict()
    lengths = {a: {n for b, n in zip(history["agent"], history["episode_length"]) if b == a} for a in agent.agents}
    assert lengths == {"agent_0": {8}, "agent_1": {5}}  # every agent-episode: agent_1's from its join on
    from support import run_cli

    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "3", "--json")  # the checkpoint
    assert code == 0 and json.loads(out)["mean_return"] == 6.5 and json.loads(out)["episodes"] == 3, err


def test_evaluation_counts_a_copys_episodes_when_agents_respawn():
    """Counted per row, an agent with two episodes in one of its copy's filled its count early, and one that
    never joins would never fill it (an evaluation that never ended)."""
    agent = canter.train("ppo", env=LATE, env_kwargs={"join_at": 1, "respawn": True}, seed=0, max_steps=64,
                         n_envs=1, n_steps=32, batch_size=32, eval_every=0)
    env = make_vec_env(LATE, 2, env_kwargs={"join_at": 1, "respawn": True})
    result = evaluate(agent, env, 4, seed=3)
    env.close()
    assert result.episodes == 4 and len(result.returns) >= 8 and sum(result.lengths) <= 4 * 16
    env = make_vec_env(LATE, 1, env_kwargs={"join_at": 9})  # agent_1 never joins an 8-step episode
    result = evaluate(agent, env, 3, seed=3)
    env.close()
    assert result.episodes == 3 and result.lengths == [8, 8, 8]


@pytest.mark.parametrize("algo,policies", [("ppo", "agent"), pytest.param("dqn", "shared", marks=pytest.mark.slow)])
def test_a_run_with_respawning_agents_resumes_exactly(algo, policies, tmp_path):
    common = dict(env_kwargs={"join_at": 2, "respawn": True}, policies=policies, n_envs=2, seed=5,
                  eval_every=512, checkpoint_every=512, target_reward=None)
    common.update(dict(n_steps=64, batch_size=64, n_epochs=2) if algo == "ppo" else dict(learning_starts=200))
    whole = canter.train(algo, env=LATE, run_dir=tmp_path / "whole", max_steps=1536, **common)
    canter.train(algo, env=LATE, run_dir=tmp_path / "part", max_steps=768, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=1536)
    modules = [a.algorithm.modules() for a in (whole, resumed)]
    for name, module in modules[0].items():
        for a, b in zip(module.parameters(), modules[1][name].parameters()):
            assert torch.equal(a, b), name
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[0]["episodes"] == summaries[1]["episodes"]


@pytest.mark.parametrize("algo", ["mappo", "qmix"])
def test_a_central_critic_and_a_mixer_see_absent_agents_as_zeros(algo, capsys, tmp_path):
    """As agents that left: zeros in the global state and (QMIX) in the joint observation; training, the
    checkpoint, eval and play run."""
    from support import run_cli

    env = make_vec_env(LATE, 1, policies="joint" if algo == "qmix" else "shared", central_state=algo == "mappo")
    obs = env.reset(seed=0)
    if algo == "qmix":
        m = env.single_observation_space.mask_width  # the alive mask (the env has no action masks)
        np.testing.assert_array_equal(obs[0, 1, :-m], 0)  # agent_1's row
        assert obs[0, 1, -m:].tolist() == [1] + [0] * (m - 1)  # not yet joined: action 0 alone
        assert obs[0, 2, :3].sum() == 1 and obs[0, 2, 3:6].sum() == 0  # the state: agent_1's part zeros
        for t in range(3):  # agent_1 joins on the third step: the team reward leaves its join reward out
            step = env.step(obs[:, :2, :3].argmax(-1))
            assert step.reward.tolist() == [1.0] and (obs[0, 1, :-m].sum() == 0) == (t < 3)
            obs = step.obs
        assert obs[0, 1, :3].sum() == 1 and obs[0, 2, 3:6].sum() == 1  # its first observation, in the state too
        assert (obs[0, 1, -m:] == 1).all()  # in the episode: every action allowed
    else:
        np.testing.assert_array_equal(obs[1, 0], 0)
        assert obs[0, 1, 3:6].sum() == 0 and obs[0, 1, 6:8].tolist() == [1, 0]
    env.close()
    canter.train(algo, env=LATE, seed=0, max_steps=300, eval_every=150, run_dir=tmp_path / "run",
                 **(dict(n_steps=32, batch_size=32) if algo == "mappo" else dict(learning_starts=50)))
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "2", "--json")
    assert code == 0 and json.loads(out)["episodes"] == 2, err
    code, out, err = run_cli(capsys, "play", str(tmp_path / "run"), "--episodes", "1")
    assert code == 0, err


@pytest.mark.parametrize("policies", ["shared", "agent"])
def test_observation_statistics_skip_the_placeholders_of_agents_not_yet_joined(policies):
    """``normalize_obs`` counts the real observations acted on (not the final ones, as SB3's VecNormalize): the
    reset reported every row as one (a placeholder of zeros counted for each agent that joins later)."""
    trainer = canter.make_trainer("ppo", LATE, policies=policies, seed=0, n_envs=1, max_steps=64, n_steps=8,
                                  normalize_obs=True, eval_every=0)
    seen = []  # the observations acted on, every policy's rows together

    def keep(obs, out=None):  # but a final observation (of a step that ended an agent's episode): not counted
        rows = np.concatenate(list(obs.values())) if isinstance(obs, dict) else obs
        if out is not None:
            steps = [*out.steps.values()] if hasattr(out, "steps") else [out]
            rows = rows[~np.concatenate([s.terminated | s.truncated for s in steps])]
        seen.append(rows)

    env, step, reset = trainer.env, trainer.env.step, trainer.env.reset
    env.reset = lambda *a, **k: (keep(out := reset(*a, **k)), out)[1]
    env.step = lambda actions: (keep((out := step(actions)).obs, out), out)[1]
    list(trainer())
    obs = seen[:-1]  # the last step's observations: not acted on
    real = sum(int((o.sum(-1) == 1).sum()) for o in obs)  # one-hot targets; placeholders are zeros
    agents = [trainer.agent] if policies == "shared" else list(trainer.agent.agents.values())
    counted = sum(a.obs_rms.count for a in agents) - 1e-4 * len(agents)
    assert real < 2 * len(obs)  # placeholders were acted on
    assert counted == pytest.approx(real)
    trainer.close()
