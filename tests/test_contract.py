"""Contract tests parametrised over every registered algorithm, so a new algorithm is covered automatically.

Together with ``test_determinism.py`` (same seed -> same learning curve and update statistics,
``canter train ALGO --help`` lists every hyperparameter), these check that each algorithm:
round-trips through a checkpoint (same deterministic actions; the full learner state, so the
next update from the same batch is identical), and either supports an action space or refuses
it with a one-line CanterError before anything runs.
"""
import gymnasium as gym
import numpy as np
import pytest
import torch
from test_determinism import SMALL, _env_for, offline_kwargs, spaces_for

import canter
from canter.checkpoint import flatten_state
from canter.errors import CanterError
from canter.registry import lookup, names


def _state_tensors(agent) -> tuple:
    return flatten_state(agent.state_dict())


def _capture_next_batch(trainer) -> object:
    """Run one more trainer iteration, recording the first batch handed to ``learn`` (no update is made)."""
    algorithm = trainer.algorithm
    seen = []

    def spy(batch, *_):  # DQN's learn also takes the minibatch's precomputed target values
        seen.append(batch)
        return {}

    def spy_phase(batch, steps):  # a whole phase's batch (algorithms with phase_batching)
        seen.append(batch)
        return [{}] * steps

    algorithm.learn, algorithm.learn_phase = spy, spy_phase
    try:
        trainer.iteration()
    finally:
        del algorithm.learn, algorithm.learn_phase
    return seen[0]


@pytest.mark.parametrize("algo", names("algorithm"))
def test_checkpoint_round_trip_same_actions_and_same_next_update(algo, tmp_path):
    env_id = _env_for(algo)
    run = canter.make_trainer(algo, env_id, run_dir=tmp_path / "run", seed=4, max_steps=800, n_envs=2, eval_every=0,
                              eval_episodes=1, checkpoint_every=0, **SMALL.get(algo, {}), **offline_kwargs(algo, env_id))
    for _ in run():
        pass
    trainer, agent = run.trainer, run.agent
    assert trainer.algorithm.updates > 0

    # deterministic actions: weights-only load (what eval/play use) and full load agree with the live agent
    space = agent.observation_space
    space.seed(0)
    obs = np.stack([space.sample() for _ in range(32)])
    expected = agent.predict(obs)
    for weights_only in (True, False):
        loaded = canter.load(tmp_path / "run" / "checkpoints" / "last", weights_only=weights_only)
        np.testing.assert_array_equal(loaded.predict(obs), expected)

    # full state: every tensor of the learner (networks, optimizers, RNG, counters, extras) survives
    sk_a, t_a = _state_tensors(agent)
    sk_b, t_b = _state_tensors(loaded)
    assert sk_a == sk_b and t_a.keys() == t_b.keys()
    for key in t_a:
        assert torch.equal(t_a[key], t_b[key]), key

    # so the next update from the same batch is identical (collecting the batch draws actions from the
    # live algorithm's generator, so its state is put back first)
    generator_state = agent.algorithm.generator.get_state()
    batch = _capture_next_batch(trainer)
    agent.algorithm.generator.set_state(generator_state)
    # collecting also folded the new observations and returns into the live agent's normalisation
    # statistics (presets with normalize_obs / normalize_reward): the loaded agent takes the same
    for name in ("obs_rms", "ret_rms"):
        if getattr(agent, name, None) is not None:
            getattr(loaded, name).load_state_dict(getattr(agent, name).state_dict())
    if getattr(agent, "ret_rms", None) is not None:
        loaded._returns = agent._returns.copy()
    for a in (agent, loaded):
        a.algorithm.set_progress(trainer.step, trainer.run.max_steps)
    stats_a, stats_b = agent.learn(batch), loaded.learn(batch)
    assert stats_a == stats_b and stats_a
    _, t_a = _state_tensors(agent)
    _, t_b = _state_tensors(loaded)
    for key in t_a:
        assert torch.equal(t_a[key], t_b[key]), key
    run.close()


@pytest.mark.parametrize("algo", names("algorithm"))
@pytest.mark.parametrize("env_id, space", [("CartPole-v1", gym.spaces.Discrete), ("Pendulum-v1", gym.spaces.Box)])
@pytest.mark.filterwarnings("ignore::canter.errors.CanterWarning")  # 64 steps: shorter than a rollout / learning_starts
def test_supported_action_spaces_train_and_others_are_refused(algo, env_id, space):
    cls = lookup("algorithm", algo)
    kw = dict(max_steps=64, n_envs=2, eval_every=0, eval_episodes=1, **SMALL.get(algo, {}),
              **offline_kwargs(algo, env_id))
    if cls.multiagent_only:  # QMIX, MAPPO: a single-agent env is refused whatever its spaces
        with pytest.raises(CanterError, match="multi-agent|action space") as exc:
            canter.make_trainer(algo, env_id, **kw)
        assert "\n" not in str(exc.value)
    elif space in cls.action_spaces:
        trainer = canter.make_trainer(algo, env_id, **kw)
        records = list(trainer())
        trainer.close()
        assert records[-1].step >= 64
    else:
        with pytest.raises(CanterError, match=f"{algo.upper()} needs a .* action space") as exc:
            canter.make_trainer(algo, env_id, **kw)
        assert "\n" not in str(exc.value)


@pytest.mark.parametrize("algo", names("algorithm"))
def test_agent_normalises_observations_once(algo):
    """With ``normalize_obs``, the algorithm sees each observation normalised exactly once, on the
    NumPy acting shortcut and on the torch path alike, exploring and deterministic (an action mask's columns, which
    QMIX's joint observation always carries, left as they are)."""
    from canter.agents.agent import Agent
    from canter.envs.masks import mask_width

    obs_space, act_space = spaces_for(algo)
    cls = lookup("algorithm", algo)
    algorithm = cls(obs_space, act_space, cls.Config(), seed=0)
    agent = Agent(algorithm, normalize_obs=True)
    seen = []
    act, act_numpy = algorithm.act, algorithm.act_numpy
    algorithm.act = lambda obs, deterministic=False: seen.append(np.array(obs)) or act(obs, deterministic)
    algorithm.act_numpy = lambda obs, deterministic=False: seen.append(np.array(obs)) or act_numpy(obs, deterministic)
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs = (rng.standard_normal((4,) + obs_space.shape) * 5 + 3).astype(np.float32)
        for call in (agent.sample, agent.predict):
            seen.clear()
            call(obs)  # sample updates the statistics first, predict uses them as they are
            var, eps = agent.obs_rms.var, agent.obs_std_eps  # eps: TD3+BC's paper normalisation, unclipped
            std, clip = (np.sqrt(var + 1e-8), 10.0) if eps is None else (np.sqrt(var) + eps, np.inf)
            expected = np.clip((obs - agent.obs_rms.mean) / std, -clip, clip)
            width = mask_width(obs_space)  # an action mask's columns (QMIX's alive mask) pass as they are
            if width:
                expected[..., -width:] = obs[..., -width:]
            assert seen and all(np.allclose(s, expected, atol=1e-5) for s in seen), call.__name__
