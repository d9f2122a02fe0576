"""``init_from`` a multi-policy run whose policies trained with algorithms of their own (``policy_hparams.<p>.algo``):
each policy must start from a policy of its own algorithm, refused in one line otherwise."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from support import MIXED, assert_one_line_error, assert_train_refused, run_cli  # noqa: E402

SHORT = dict(env=MIXED, policies="type", seed=3, target_reward=None, n_envs=1, n_steps=32, batch_size=32, n_epochs=1,
             eval_every=0, max_steps=96, quiet=True)
A2C_LISTENER = {"listener": {"algo": "a2c"}}


@pytest.mark.parametrize("ours", [{}, {"listener": {"algo": "dqn"}}, {"listener": {"algo": "a2c", "frozen": True}}])
def test_init_from_a_policy_of_another_algorithm_is_refused(ours, capsys, tmp_path):
    """The source's listener trained with A2C. Into a PPO listener its networks (the same shapes) loaded without a
    word; into a DQN one the error named the activation, which was not the difference. Each policy's algorithm is
    checked, the run's own (``frozen: true`` with the same algorithm) loads."""
    canter.train("ppo", run_dir=tmp_path / "source", policy_hparams=A2C_LISTENER, **SHORT)
    argv = ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "96", "--set", "n_steps=32", "--set", "eval_every=0"]
    if ours.get("listener", {}).get("algo") == "a2c":  # the same algorithm: it loads (and stays frozen)
        agent = canter.train("ppo", run_dir=tmp_path / "run", init_from=str(tmp_path / "source"),
                             policy_hparams=ours, **SHORT)
        assert agent.agents["listener"].algorithm.config.__class__.__module__.endswith("a2c")
        return
    argv += ["--set", f"policy_hparams={json.dumps(ours)}"] if ours else []
    want = "its policy 'listener' trained with a2c, this run's with " + ours.get("listener", {}).get("algo", "ppo")
    assert_train_refused(capsys, tmp_path, argv, want)
    assert_train_refused(capsys, tmp_path, argv, "set policy_hparams.listener.algo=a2c")


@pytest.mark.parametrize("source, ours, needle", [
    (True, {}, "its policy 'listener' normalised observations, and its networks expect them so: set "
               "policy_hparams.listener.normalize_obs=true"),
    (False, {"normalize_obs": True}, "its policy 'listener' did not normalise observations"),
    (True, {"normalize_obs": True, "policy_hparams": {"speaker": {"normalize_obs": False}}},
     "set policy_hparams.speaker.normalize_obs=true"),
])
def test_init_from_a_policy_normalised_otherwise_is_refused(source, ours, needle, tmp_path):
    """A single run's init_from refuses a source of other observation normalisation; a multi-policy run's loaded it
    without a word (its agent state nests each policy's: the check read neither), so networks trained on normalised
    observations got raw ones, or the other way round."""
    canter.train("ppo", run_dir=tmp_path / "source", normalize_obs=source, **SHORT)
    with pytest.raises(canter.CanterError, match=needle.replace(".", r"\.")):
        canter.train("ppo", run_dir=tmp_path / "run", init_from=str(tmp_path / "source"), **{**SHORT, **ours})
    agent = canter.train("ppo", run_dir=tmp_path / "same", init_from=str(tmp_path / "source"), normalize_obs=source,
                         **SHORT)  # the same normalisation: it loads (the statistics too)
    assert all((a.obs_rms is not None) == source for a in agent.agents.values())


def test_init_from_a_policy_whose_rewards_were_scaled_otherwise_is_refused(tmp_path):
    """Each policy's normalize_reward is checked against its source policy's (policy_hparams.<p>.normalize_reward)."""
    canter.train("ppo", run_dir=tmp_path / "source", normalize_reward=True, **SHORT)
    with pytest.raises(canter.CanterError, match=r"its policy 'speaker' scaled rewards \(normalize_reward\), .*: "
                                                 r"set policy_hparams\.speaker\.normalize_reward=true$"):
        canter.train("ppo", run_dir=tmp_path / "run", init_from=str(tmp_path / "source"), normalize_reward=True,
                     **{**SHORT, "policy_hparams": {"speaker": {"normalize_reward": False}}})
    agent = canter.train("ppo", run_dir=tmp_path / "same", init_from=str(tmp_path / "source"), normalize_reward=True,
                         **SHORT)
    assert all(a.ret_rms is not None for a in agent.agents.values())


def test_init_from_a_run_of_other_policies_is_refused_for_its_spaces(capsys, tmp_path):
    """A ``policies: agent`` source whose ``agent_1`` trained with DQN, into a ``policies: type`` run (one policy,
    ``agent``): refused as "set policy_hparams.agent_1.algo=dqn", a policy this run does not have (which that setting
    would then be refused for); the sources' policies are not this run's, which the spaces check says."""
    match = "pettingzoo:tests.match_agents"
    canter.train("ppo", policy_hparams={"agent_1": {"algo": "dqn", "learning_starts": 8}},
                 run_dir=tmp_path / "source", **{**SHORT, "env": match, "policies": "agent", "max_steps": 64})
    argv = ["train", "ppo", "--env", match, "--set", "policies=type", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "64", "--n-envs", "1", "--set", "n_steps=32", "--set", "eval_every=0"]
    assert_train_refused(capsys, tmp_path, argv, "was trained on {agent_0: Box")


@pytest.mark.parametrize("ours", [None, {"ally", "listener"}])
def test_every_policy_is_compared_not_only_the_first(ours):
    """The check's loop set ``ours`` (the run's policy names) to the first compared policy's algorithm ('ppo'), so
    every later policy was skipped as not in 'ppo': with ``policy_hparams`` of the run's 'ally' (sorted before
    'listener') the source's A2C listener went unchecked, before the build and after it."""
    from types import SimpleNamespace

    from canter.errors import CanterError
    from canter.init_from import _check_algorithm

    meta = {"config": {"algo": "ppo", "env": MIXED, "policies": "type", "policy_hparams": A2C_LISTENER}}
    run = SimpleNamespace(algo="ppo", env=MIXED, policies="type", policy_hparams={"ally": {"n_epochs": 2}})
    with pytest.raises(CanterError, match="its policy 'listener' trained with a2c, this run's with ppo"):
        _check_algorithm("SRC", meta, "ppo", run, ours)


def test_init_from_a_run_of_another_env_is_refused_for_its_spaces(capsys, tmp_path):
    """The same ``policies`` mode, another env: the source's DQN ``agent_1`` is no policy of this ``policies: agent``
    run on the speaker/listener env, which was refused as "set policy_hparams.agent_1.algo=dqn" before the build (the
    sibling of the other-mode case above); the spaces check says what differs."""
    match = "pettingzoo:tests.match_agents"
    canter.train("ppo", policy_hparams={"agent_1": {"algo": "dqn", "learning_starts": 8}},
                 run_dir=tmp_path / "source", **{**SHORT, "env": match, "policies": "agent", "max_steps": 64})
    argv = ["train", "ppo", "--env", MIXED, "--set", "policies=agent", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "96", "--n-envs", "1", "--set", "n_steps=32", "--set", "eval_every=0"]
    assert_train_refused(capsys, tmp_path, argv, "was trained on {agent_0: Box")


def test_init_from_a_run_of_other_env_kwargs_is_refused_for_its_spaces(capsys, tmp_path):
    """The same env and ``policies`` mode, other ``env_kwargs``: the source's DQN ``agent_2`` (``n_agents: 3``) is no
    policy of this two-agent run, which was refused as "set policy_hparams.agent_2.algo=dqn" before the build (the
    sibling of the other-env case above); the spaces check says what differs."""
    match = "pettingzoo:tests.match_agents"
    canter.train("ppo", policy_hparams={"agent_2": {"algo": "dqn", "learning_starts": 8}}, env_kwargs={"n_agents": 3},
                 run_dir=tmp_path / "source", **{**SHORT, "env": match, "policies": "agent", "max_steps": 64})
    argv = ["train", "ppo", "--env", match, "--set", "policies=agent", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "96", "--n-envs", "1", "--set", "n_steps=32", "--set", "eval_every=0"]
    assert_train_refused(capsys, tmp_path, argv, "agent_2: Box(shape=(3,), float32)} -> {agent_0: Discrete(3)")


def test_init_from_a_run_of_another_policies_mode_names_the_mode(capsys, tmp_path):
    """A ``policies: type`` source into a ``policies: agent`` run on the same env: its policies are not this run's, so
    the spaces differ; the error named the spaces only, not the setting that fits the source (``policies=type``)."""
    canter.train("ppo", run_dir=tmp_path / "source", **SHORT)
    argv = ["train", "ppo", "--env", MIXED, "--set", "policies=agent", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "96", "--n-envs", "1", "--set", "n_steps=32", "--set", "eval_every=0"]
    assert_train_refused(capsys, tmp_path, argv, "it trained with policies: type: set policies=type")


def test_init_from_a_run_of_another_env_and_mode_names_no_mode(capsys, tmp_path):
    """A ``policies: shared`` source on another env into a ``policies: agent`` run: the spaces error ended 'set
    policies=shared', which would not fit it either (the envs differ); the mode is named only for the same env."""
    match = "pettingzoo:tests.match_agents"
    canter.train("ppo", run_dir=tmp_path / "source", **{**SHORT, "env": match, "policies": "shared", "max_steps": 64})
    argv = ["train", "ppo", "--env", MIXED, "--set", "policies=agent", "--set", f"init_from={tmp_path / 'source'}",
            "--max-steps", "96", "--n-envs", "1", "--set", "n_steps=32", "--set", "eval_every=0"]
    code, _, err = run_cli(capsys, *argv, "--quiet", "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "was trained on Box(shape=(3,), float32) -> Discrete(3)")
    assert "set policies" not in err and not (tmp_path / "run").exists(), err
