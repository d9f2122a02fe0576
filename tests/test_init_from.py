"""init_from: a new run starting from a saved agent's weights (Stable-Baselines3's ``PPO.load(path, env=new_env)``
then ``model.learn``), which canter had no way to do: ``--resume`` continues the same run on the same env only."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from support import assert_one_line_error, run_cli

import canter
from canter.errors import CanterError

TINY = dict(max_steps=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_episodes=1, eval_every=0,
            target_reward=None)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A tiny PPO run on CartPole-v1 with observation normalisation, and its agent."""
    run_dir = tmp_path_factory.mktemp("init") / "source"
    agent = canter.train("ppo", "CartPole-v1", run_dir=run_dir, seed=3, normalize_obs=True, **TINY)
    return run_dir, agent


def test_a_new_run_on_another_env_starts_from_the_saved_weights_and_statistics(source, tmp_path):
    run_dir, agent = source
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    with canter.make_trainer("ppo", "CartPole-v0", seed=0, init_from=str(run_dir), normalize_obs=True, **TINY) as t:
        np.testing.assert_array_equal(t.agent.predict(obs), agent.predict(obs))  # weights and obs statistics
        np.testing.assert_array_equal(t.agent.obs_rms.mean, agent.obs_rms.mean)
        records = list(t())
    assert records[0].step == 128 and t.step == 256  # counters start over: a new run
    fresh = canter.make_trainer("ppo", "CartPole-v0", seed=0, normalize_obs=True, **TINY)
    assert not np.array_equal(fresh.agent.predict(obs), agent.predict(obs))  # without it: new weights
    fresh.close()


def test_a_run_from_init_from_resumes_without_its_source(source, tmp_path):
    """The run's config records init_from; --resume continues from the run's own last checkpoint, so the source
    may be gone by then."""
    copy = tmp_path / "copy"
    shutil.copytree(source[0], copy)
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", init_from=str(copy), normalize_obs=True, **TINY)
    shutil.rmtree(copy)
    agent = canter.resume(tmp_path / "run", max_steps=384)
    assert agent.metadata["step"] == 384 and agent.run_config.init_from == str(copy)


@pytest.mark.parametrize("algo, env, kwargs, needle", [
    ("dqn", "CartPole-v1", {}, "holds a ppo agent, not dqn"),
    ("ppo", "Acrobot-v1", {"normalize_obs": True}, "was trained on Box(shape=(4,), float32) -> Discrete(2), "
                                                   "Acrobot-v1 has Box(shape=(6,), float32) -> Discrete(3)"),
    ("ppo", "CartPole-v1", {"normalize_obs": True, "net_arch": [16]}, "its networks do not fit this run's (give "
     "the hyperparameters that shape them as its run had them; differing: net_arch [64, 64] there, [16] here)"),
    ("ppo", "CartPole-v1", {"normalize_obs": True, "activation": "relu"}, "activation tanh, this run's relu: "
                                                                         "set activation=tanh"),
    ("ppo", "CartPole-v1", {}, "its run normalised observations, and its networks expect them so: set "
                               "normalize_obs=true"),
])
def test_an_agent_that_does_not_fit_is_refused_in_one_line(source, algo, env, kwargs, needle):
    with pytest.raises(CanterError) as exc:
        canter.make_trainer(algo, env, init_from=str(source[0]), **kwargs)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_the_cli_refuses_a_missing_source_before_writing_anything(capsys, tmp_path):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"init_from={tmp_path / 'nope'}",
                           "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "init_from: no such run directory or checkpoint")
    assert not (tmp_path / "run").exists()


def test_a_multi_policy_run_starts_from_one_whose_policies_have_their_own_activations(tmp_path):
    """Each policy's activation is checked against that policy's in the source: a policy_hparams activation of the
    first policy was compared with the run's hparams (refused: 'activation tanh, this run's relu')."""
    pytest.importorskip("pettingzoo")
    from support import MIXED

    common = dict(env=MIXED, policies="type", policy_hparams={"listener": {"activation": "relu"}}, n_envs=2,
                  n_steps=16, max_steps=96, eval_episodes=0)
    source = canter.train("ppo", run_dir=tmp_path / "source", **common)
    trainer = canter.make_trainer("ppo", init_from=str(tmp_path / "source"), **common)
    for p, policy in source.agents.items():
        for a, b in zip(policy.algorithm.modules().values(), trainer.agent.agents[p].algorithm.modules().values()):
            assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    trainer.close()
    with pytest.raises(CanterError, match="policy 'listener' uses activation relu, this run's tanh: set "
                                          "policy_hparams.listener.activation=relu"):
        canter.train("ppo", init_from=str(tmp_path / "source"), **{**common, "policy_hparams": {}})


def test_the_cli_refuses_another_algorithms_source_in_one_line(source, capsys, tmp_path):
    """The source's algorithm was checked after the trainer was built, so DQN's warning for a budget below its
    learning_starts came first: two lines on stderr (found auditing training-control.md's 'refused in one line')."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--set", f"init_from={source[0]}",
                           "--max-steps", "100", "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "holds a ppo agent, not dqn")
    assert not (tmp_path / "run").exists()
