"""PettingZoo parallel envs as vector envs: every agent a sub-env, agents that leave and come back,
seeds per copy, and the one-line refusals of envs that do not fit."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from support import ENV, assert_one_line_error, assert_train_refused, run_cli  # noqa: E402


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


def test_an_agent_still_in_agents_on_the_step_it_ended_is_refused():
    """An agent that ends and stays in ``agents`` on that step would need its final observation and a new
    trajectory's first in one row (a respawn must be absent for a step: tests/test_multiagent_join.py)."""
    env = make_vec_env(ENV, 1, env_kwargs={"n_agents": 2, "miss_leaves": True, "revive": True})
    miss = env.reset(seed=0).argmax(1)
    miss[1] = (miss[1] + 1) % 3  # agent_1 misses and leaves; the env keeps it in its agents
    with pytest.raises(CanterError, match="agent 'agent_1' is still in the agents of .* after its episode ended"):
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


def test_a_pettingzoo_game_missing_a_dependency_names_pettingzoos_extra(capsys, monkeypatch, tmp_path):
    """tictactoe_v3 imports pygame: without it (the multiagent extra did not install it) the error named the
    missing module but not what to install."""
    import sys

    for name in [m for m in sys.modules if m.startswith("pettingzoo.classic")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame: ModuleNotFoundError
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:pettingzoo.classic.tictactoe_v3", "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "cannot import module 'pettingzoo.classic.tictactoe_v3'", "pygame",
                          "PettingZoo's classic envs need their dependencies: pip install 'pettingzoo[classic]'")
    assert not (tmp_path / "run").exists()
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:pettingzoo.classic.no_such_game_v1", "--quiet")
    line = assert_one_line_error(code, err, "cannot import module 'pettingzoo.classic.no_such_game_v1'")
    assert "pip install" not in line  # a misspelled game is not a missing dependency


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


@pytest.mark.parametrize("policies", ["shared", "type", "joint"])
def test_evaluation_episodes_of_an_env_without_a_time_limit_end(monkeypatch, policies):
    """A parallel env with no time limit never ended the evaluation (or play) episode of a policy that
    never leaves it, and the run's first evaluation never returned: evaluation envs truncate a copy's
    episode after EVAL_EPISODE_CAP steps, as they do single-agent envs; training envs keep the env's ending."""
    import importlib

    from canter.envs import make

    monkeypatch.setattr(importlib.import_module(ENV.split(":")[1]), "LENGTH", 10**9)
    monkeypatch.setattr(make, "EVAL_EPISODE_CAP", 12)
    for training in (False, True):
        env = make_vec_env(ENV, 2, env_kwargs={"n_agents": 2}, training=training, policies=policies)
        obs = env.reset(seed=0)
        lengths = []
        for _ in range(14):
            step = env.step({k: np.zeros(len(v), np.int64) for k, v in obs.items()} if isinstance(obs, dict)
                            else np.zeros((len(obs), 2) if policies == "joint" else len(obs), np.int64))
            lengths += env.finished_lengths.tolist()
            obs = step.obs
        env.close()
        copies_agents = 2 if policies == "joint" else 4
        assert lengths == ([] if training else [12] * copies_agents)


@pytest.mark.parametrize("env, needle", [
    # an older version of a game (PettingZoo 1.27 has knights_archers_zombies_v11) named no valid one
    ("pettingzoo.butterfly.knights_archers_zombies_v10", "did you mean pettingzoo.butterfly.knights_archers_zombies_v11"),
    ("pettingzoo.classic.gin_rummy_v4", "pettingzoo.classic's games: chess_v6, connect_four_v3"),
    # MPE moved to its own package; the error did not say what to install
    pytest.param("mpe2.simple_spread_v3", "MPE is the mpe2 package: pip install mpe2",
                 marks=pytest.mark.skipif(importlib.util.find_spec("mpe2") is not None, reason="mpe2 installed")),
])
def test_an_unknown_pettingzoo_game_names_the_closest_one(env, needle, capsys, tmp_path):
    """A sweep over PettingZoo 1.27 found these refused without a valid choice."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", f"pettingzoo:{env}"], needle)
