"""Recurrent PPO's agent acting with its memory: predict's episode starts (one for all rows or one per row) and
another batch size than an evaluation's, predict_with_state (the memory kept by the caller), explore's own
memory, begin_episodes, play and evaluations leaving predict's memory empty, and acting without the critic.
Training, resume, checkpoints and refusals: tests/test_recurrent.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import canter
from canter.errors import CanterError
from support import CUE as ENV
from support import CUE_HP as HP


def test_evaluating_with_another_batch_size_than_predict_starts_from_empty_memory():
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64)
    agent = trainer.agent
    trainer.close()
    agent.predict(np.zeros((3, 4), np.float32))  # memory for a batch of 3
    env = make_vec_env("CartPole-v1", 2)
    result = evaluate(agent, env, 2, seed=0)  # two envs: it multiplied a [1, 3, h] memory by a [1, 2, 1] mask
    env.close()
    assert len(result.returns) == 2
    agent.predict(np.zeros((3, 4), np.float32))
    agent.begin_episodes(np.array([True, False]))
    assert agent.memory["predict"] is None  # the next batch (of 2) starts from empty memory


@pytest.mark.parametrize("critic_lstm", [False, True])
def test_predict_on_a_batch_takes_one_episode_start_for_all_rows_or_one_per_row(critic_lstm):
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  lstm_hidden=8, critic_lstm=critic_lstm)
    agent = trainer.agent
    trainer.close()
    obs = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    agent.predict(obs, episode_start=np.ones(4, bool))
    agent.predict(obs, episode_start=np.zeros(4, bool))
    carried = agent.memory["predict"][0].clone()
    agent.predict(obs, episode_start=np.ones(4, bool))
    agent.predict(obs, episode_start=False)  # a single bool: every row continues its episode
    torch.testing.assert_close(agent.memory["predict"][0], carried)  # it used to wipe (or crash on) the memory
    agent.predict(obs, episode_start=True)  # every row starts an episode
    fresh = agent.memory["predict"][0].clone()
    agent.predict(obs, episode_start=np.ones(4, bool))
    torch.testing.assert_close(agent.memory["predict"][0], fresh)
    with pytest.raises(CanterError, match="one bool per observation"):
        agent.predict(obs, episode_start=np.zeros(3, bool))


def test_predict_with_state_keeps_the_memory_with_the_caller():
    """predict's memory is the agent's own, so two loops sharing an agent corrupted each other's memory;
    sb3-contrib's predict(obs, state, episode_start) gives each caller its own."""
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  lstm_hidden=8, critic_lstm=True)
    agent = trainer.agent
    trainer.close()
    rng = np.random.default_rng(0)
    a_obs, b_obs = (rng.normal(size=(5, 4)).astype(np.float32) for _ in range(2))
    expected = [agent.predict(o, episode_start=i == 0) for i, o in enumerate(a_obs)]  # one loop alone
    agent.memory["predict"] = None
    a_state = b_state = None
    got = []
    for i in range(5):  # two loops interleaved, each with its own state: loop a acts as it did alone
        action, a_state = agent.predict_with_state(a_obs[i], a_state, episode_start=i == 0)
        _, b_state = agent.predict_with_state(b_obs[i], b_state, episode_start=i == 0)
        got.append(action)
    assert got == expected and agent.memory["predict"] is None  # the agent's own memory untouched
    assert a_state[0].shape == (1, 1, 16) and isinstance(a_state[0], np.ndarray)
    _, fresh = agent.predict_with_state(a_obs[0])
    _, zeroed = agent.predict_with_state(a_obs[0], a_state, episode_start=True)
    np.testing.assert_array_equal(fresh[0], zeroed[0])
    with pytest.raises(CanterError, match=r"state must be the \(h, c\) pair a previous call returned for 2 obs"):
        agent.predict_with_state(a_obs[:2], a_state)
    # sb3-contrib's call on predict: the error names predict_with_state (it said only "it takes obs, episode_start,
    # deterministic", or "takes from 2 to 3 positional arguments")
    # (and predict(obs, state): the state went to episode_start, 'needs one bool per observation ... got shape
    # (2, 1, 1, 16)', naming no predict_with_state)
    for call in (lambda: agent.predict(a_obs[0], state=a_state, episode_start=True),
                 lambda: agent.predict(a_obs[0], a_state, True), lambda: agent.predict(a_obs[0], a_state),
                 lambda: agent.predict(a_obs[0], tuple(torch.as_tensor(s) for s in a_state))):
        with pytest.raises(CanterError, match=r"is agent.predict_with_state\(obs, state, episode_start\)"):
            call()


def test_explore_carries_a_memory_of_its_own():
    """explore (e.g. an opponent's sampled moves) started every call from empty memory: the agent
    acted memorylessly. Now it carries its own memory, as predict does, and leaves the others alone."""
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  lstm_hidden=8)
    agent = trainer.agent
    trainer.close()
    algo = agent.algorithm
    obs = np.random.default_rng(0).normal(size=(3, 6, 4)).astype(np.float32)  # 3 steps of 6 envs
    trained, evaluating = agent.memory["sample"], agent.memory["predict"]
    got = [agent.explore(obs[0], generator=torch.Generator().manual_seed(5), episode_start=True)]
    gen = torch.Generator().manual_seed(7)
    got += [agent.explore(o, generator=gen) for o in obs[1:]]
    state, gen, want = algo.model.initial_state(6), torch.Generator().manual_seed(5), []
    for t, o in enumerate(obs):
        if t == 1:
            gen = torch.Generator().manual_seed(7)
        own, algo.generator = algo.generator, gen
        with torch.inference_mode():
            out, state = algo.act_recurrent(torch.from_numpy(o), state, deterministic=False)
        algo.generator = own
        want.append(out.actions.numpy())
    np.testing.assert_array_equal(np.stack(got), np.stack(want))
    torch.testing.assert_close(agent.memory["explore"][0][..., :8], state[0][..., :8])  # the actor's half (the
    # critic's is not advanced by acting without values)
    assert agent.memory["sample"] is trained and agent.memory["predict"] is evaluating
    agent.explore(obs[0], episode_start=np.array([True] + [False] * 5))
    with pytest.raises(CanterError, match="one bool per observation"):
        agent.explore(obs[0], episode_start=np.zeros(2, bool))


def test_begin_episodes_takes_a_list_or_tuple_of_starts():
    """A list (as predict's episode_start takes) raised AttributeError: 'list' object has no attribute 'any'."""
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  lstm_hidden=8)
    agent = trainer.agent
    trainer.close()
    obs = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    for starts in ([True, False], (True, False)):
        agent.predict(obs, episode_start=True)
        agent.predict(obs)
        agent.begin_episodes(starts)
        h = agent.memory["predict"][0]
        assert not h[0, 0].any() and h[0, 1].any()  # only the first env's memory is zeroed


def test_play_leaves_the_callers_predict_memory_empty():
    """``play`` (``canter play``, and ``--record-every``, whose last video comes after training's last
    evaluation) left the memory of its last episode's end: ``canter.train(..., record_every=N)`` returned an
    agent whose ``predict(obs)`` went on from it."""
    from canter.play import play

    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=64, **HP)
    agent = trainer.agent
    play(agent, ENV, 1, seed=1)
    state = agent.memory["predict"]
    assert state is None or all(float(t.abs().max()) == 0.0 for t in state)
    trainer.close()


def test_an_evaluation_leaves_the_callers_predict_memory_empty():
    """After an evaluation (the trainer's, or ``canter.train``'s last), ``agent.predict(obs)`` without
    ``episode_start`` acted from the last evaluation episode's memory; SB3 starts from zeros."""
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=64, **HP)
    agent = trainer.agent
    env = make_vec_env(ENV, 1)
    evaluate(agent, env, 2, seed=1)
    state = agent.memory["predict"]
    assert state is not None and all(float(t.abs().max()) == 0.0 for t in state)
    env.close()
    trainer.close()


def test_a_sampled_evaluation_leaves_the_callers_exploring_memory_empty():
    """``canter.evaluate(agent, deterministic=False)`` samples with the agent's exploring memory (``explore``), and left
    it at its last episode's end (found by the recurrent bug hunt): the caller's next ``agent.explore(obs)`` or
    ``agent.predict(obs, deterministic=False)`` went on from it, where a deterministic evaluation leaves ``predict``'s
    memory empty (and SB3's ``predict`` with ``state=None`` starts from zeros)."""
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    trainer = canter.make_trainer("recurrent_ppo", ENV, seed=0, max_steps=64, **HP)
    agent = trainer.agent
    env = make_vec_env(ENV, 2, "sync")
    evaluate(agent, env, 3, seed=1, deterministic=False)
    env.close()
    for kind in ("explore", "predict"):
        state = agent.memory[kind]
        assert state is None or all(float(t.abs().max()) == 0.0 for t in state), kind
    obs = np.eye(3, dtype=np.float32)[:2]
    first = agent.algorithm.model.policy_step(torch.from_numpy(obs), agent.algorithm.model.initial_state(2))[1]
    agent.explore(obs)  # from empty memory: the memory after it is a first step's
    torch.testing.assert_close(agent.memory["explore"][0], first[0], rtol=0, atol=0)
    trainer.close()


def test_play_starts_an_agent_that_rejoins_a_multiagent_episode_with_empty_memory():
    """A multi-agent episode whose agents leave and rejoin (respawn) or join late: evaluations zero an agent's
    memory when it starts a trajectory (its row's ``valid`` False), but ``play`` (``canter play``, the videos of
    ``--record-every``) zeroed it only at the episode's start, so a rejoining agent acted from the memory of its
    last stay and play's returns differed from an evaluation's on the same seed (3 of seeds 0-7; found by the
    recurrent bug hunt). Untrained weights, scaled up so the memory sways the actions."""
    from canter.envs import make_vec_env
    from canter.play import play
    from canter.trainers.evaluation import evaluate

    env_id, kwargs = "pettingzoo:tests.late_agents", {"respawn": True, "join_at": 2}
    trainer = canter.make_trainer("recurrent_ppo", env_id, seed=0, max_steps=64, n_steps=16, lstm_hidden=8,
                                  env_kwargs=kwargs, quiet=True)
    agent = trainer.agent
    with torch.no_grad():
        for p in agent.algorithm.model.parameters():
            p.mul_(3.0)
    for seed in (0, 4, 7):
        env = make_vec_env(env_id, 1, "sync", kwargs)
        evaluated = evaluate(agent, env, 1, seed=seed)
        env.close()
        assert len(evaluated.returns) > 2  # an agent rejoined
        assert play(agent, env_id, 1, seed=seed, env_kwargs=kwargs) == [pytest.approx(np.mean(evaluated.returns))]
    trainer.close()


def test_acting_without_values_skips_the_critic_with_the_same_actions():
    """predict and explore store no values, yet ran the critic's LSTM and head every step (with critic_lstm,
    half of acting's LSTM work). They now skip them: the same policy outputs, actions and actor memory as
    the full step; sample still runs the critic (its values feed GAE)."""
    from canter.agents.recurrent import _zeroed

    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", seed=0, max_steps=256, n_envs=2, n_steps=64,
                                  lstm_hidden=8)
    agent, algo = trainer.agent, trainer.agent.algorithm
    trainer.close()
    model, calls = algo.model, []
    model.critic_lstm.register_forward_hook(lambda *_: calls.append(1))
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(8, 3, 4)).astype(np.float32)
    starts = rng.random((8, 3)) < 0.3
    state = model.initial_state(3)
    for o, start in zip(obs, starts):
        before = len(calls)
        got = agent.predict(o, episode_start=start)
        agent.explore(o, episode_start=start)
        assert len(calls) == before  # no critic LSTM while acting without values
        state = _zeroed(state, start)
        with torch.inference_mode():
            full, _, _ = model.step(torch.from_numpy(o), state)
            skipped, _ = model.policy_step(torch.from_numpy(o), state)
            out, state = algo.act_recurrent(torch.from_numpy(o), state, deterministic=True)
        assert torch.equal(full, skipped)
        np.testing.assert_array_equal(got, out.actions.numpy())
        for mine, ref in zip(agent.memory["predict"], state):  # the actor's half: as the full step's
            assert torch.equal(mine[..., :8], ref[..., :8])
    agent.sample(obs[0])
    assert len(calls) > before
