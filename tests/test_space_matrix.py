"""Every algorithm against tests/space_matrix_env.py's observation and action spaces: each combination is refused
at build time in one line naming the algorithm and the space, or trains, predicts, evaluates, saves, loads and
plays with every action inside the space (the env checks each one)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import space_matrix_env as sme

import canter
from canter.errors import CanterError
from canter.play import play
from canter.registry import lookup

ALGOS = ["ppo", "a2c", "trpo", "reinforce", "recurrent_ppo", "acer", "dqn", "qrdqn", "c51", "iqn", "sac", "td3",
         "ddpg", "tqc", "sac_discrete", "impala"]
ENV = "space_matrix_env:SpaceMatrix-v0"
#: short rollouts / an early start, so that a few hundred steps update the networks
SMALL = {"ppo": dict(n_steps=32, batch_size=32, n_epochs=2), "trpo": dict(n_steps=64, batch_size=32),
         "reinforce": dict(n_steps=64), "recurrent_ppo": dict(n_steps=32, batch_size=32, n_epochs=2),
         "acer": dict(n_steps=16), "impala": dict(n_steps=16), "a2c": {}}
OFF_POLICY = dict(learning_starts=50, buffer_size=1000, batch_size=16, train_freq=4)


def _takes(algo: str, obs: str, act: str) -> bool:
    """Whether ``algo`` builds for the spaces; a refusal must be one line naming the algorithm and the space."""
    env = sme.SpaceMatrix(obs, act)
    try:
        lookup("algorithm", algo).check_spaces(env.observation_space, env.action_space)
    except CanterError as exc:
        message = str(exc)
        assert "\n" not in message and algo.upper() in message
        assert type(env.action_space).__name__ in message
        return False
    return True


@pytest.mark.parametrize("algo", ALGOS)
def test_each_action_space_is_taken_or_refused_in_one_line(algo):
    taken = [act for act in sme.ACT_SPACES if _takes(algo, "box_f32", act)]
    assert taken  # every algorithm takes some action space here


def _default_action(algo: str) -> str:
    return "discrete" if _takes(algo, "box_f32", "discrete") else "box"


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_space_matrix_trains_predicts_saves_loads_and_plays(algo, tmp_path):
    combos = [(obs, _default_action(algo)) for obs in sme.OBS_SPACES]
    combos += [("box_f32", act) for act in sme.ACT_SPACES if _takes(algo, "box_f32", act)]
    hparams = dict(SMALL.get(algo, OFF_POLICY), net_arch=[16])
    for i, (obs, act) in enumerate(combos):
        kwargs = {"obs": obs, "act": act}
        with canter.make_trainer(algo, ENV, env_kwargs=kwargs, max_steps=256, run_dir=None, seed=0,
                                 **hparams) as trainer:
            for _ in trainer():
                pass
            agent = trainer.agent
            env = gym.make(ENV, **kwargs)
            o, _ = env.reset(seed=1)
            env.step(agent.predict(o))
            env.step(agent.predict(o, deterministic=False))
            assert np.isfinite(canter.evaluate(agent, episodes=2).mean_return)
            agent.save(tmp_path / f"m{i}")
            loaded = canter.load(tmp_path / f"m{i}")
            assert np.array_equal(np.asarray(loaded.predict(o)), np.asarray(agent.predict(o))), (obs, act)
            assert len(play(loaded, episodes=1)) == 1
