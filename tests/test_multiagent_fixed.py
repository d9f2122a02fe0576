"""Policies held fixed in a parallel multi-agent env (``policy_hparams.<policy>.algo: random``, ``frozen: true``):
they act in training and evaluation, learn nothing, store no transitions, and resume exactly; bad values are
refused in one line."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from safetensors import safe_open

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.agents.fixed import RandomPolicy  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from support import HPARAMS, MIXED, assert_train_refused, run_cli, stop_at_300  # noqa: E402

RANDOM_LISTENERS = {"listener": {"algo": "random"}}
#: short runs of two env copies (the listeners' rows are two of every copy's three)
SHORT = dict(env=MIXED, policies="type", seed=3, target_reward=None, **{**HPARAMS["ppo"], "n_envs": 2,
                                                                        "eval_every": 256})


def _same(a, b) -> bool:
    """Whether two agents' (or policies') modules hold bitwise equal tensors."""
    return all(torch.equal(x, y) for m1, m2 in zip(a.algorithm.modules().values(), b.algorithm.modules().values())
               for x, y in zip(m1.state_dict().values(), m2.state_dict().values()))


def test_a_ppo_speaker_learns_beside_random_listeners(tmp_path, capsys):
    """The speaker learns its task (8 of 8; random play earns 8/3) while the listeners act uniformly at random
    (4 of 8 on average): the run's evaluation mean is then about (8 + 4 + 4) / 3, and the listeners' episodes are
    in the history. The random policy has no weights in the checkpoint and no buffer."""
    run_dir = tmp_path / "run"
    agent = canter.train("ppo", env=MIXED, policies="type", policy_hparams=RANDOM_LISTENERS, seed=0,
                         max_steps=12_000, target_reward=None, run_dir=run_dir, **HPARAMS["ppo"])
    np.testing.assert_array_equal(agent.predict({"speaker": np.eye(3, dtype=np.float32)})["speaker"], [0, 1, 2])
    assert isinstance(agent.agents["listener"], RandomPolicy)
    code, out, err = run_cli(capsys, "eval", str(run_dir), "--episodes", "10", "--json")
    result = json.loads(out)
    assert code == 0 and 4.8 <= result["mean_return"] <= 6.5, err  # a random speaker would make it about 3.6
    history = pq.read_table(run_dir / "history.parquet").to_pydict()
    assert {"speaker", "listener"} <= set(history["policy"])
    assert "listener/rolling_return" in pq.read_table(run_dir / "updates.parquet").column_names
    with safe_open(str(run_dir / "checkpoints" / "last.safetensors"), "pt") as f:
        assert not [k for k in f.keys() if k.startswith("agent.policies.listener")]
    loaded = canter.load(run_dir)
    assert loaded.predict({"listener": np.eye(4, dtype=np.float32)})["listener"].shape == (4,)
    with pytest.raises(CanterError, match="random policy"):
        loaded.agents["listener"].save(tmp_path / "listener")


def test_a_frozen_policy_keeps_its_weights_bitwise(tmp_path):
    """init_from loads both policies (of the run's best checkpoint, which canter.load reads too); the frozen listener
    acts (sampled) and is never trained or stored; its run's checkpoints hold it unchanged."""
    canter.train("ppo", run_dir=tmp_path / "first", max_steps=300, **SHORT)
    first = canter.load(tmp_path / "first")
    run = canter.make_trainer("ppo", max_steps=600, init_from=str(tmp_path / "first"), run_dir=tmp_path / "second",
                              policy_hparams={"listener": {"frozen": True}}, **SHORT)
    for _ in run():
        pass
    trainer = run.trainer
    listener, speaker = trainer.agent.agents["listener"], trainer.agent.agents["speaker"]
    assert _same(first.agents["listener"], listener) and listener.algorithm.updates == 0
    assert not _same(first.agents["speaker"], speaker) and speaker.algorithm.updates > 0
    assert not hasattr(trainer.members["listener"], "buffer") and trainer.members["listener"].step == trainer.step * 2 // 3
    assert trainer.members["listener"].episode_count > 0  # its agents' returns are counted
    run.close()
    assert _same(first.agents["listener"], canter.load(tmp_path / "second" / "checkpoints" / "last").agents["listener"])


@pytest.mark.parametrize("fixed", ["random", "frozen"])
def test_runs_with_a_fixed_policy_resume_exactly(fixed, tmp_path):
    """Stopped at step 300 and resumed: the same weights, evaluations and episodes as a run not stopped (the random
    policy's draws continue from its saved generators; 1 to 1.5 s)."""
    common = dict(SHORT, policy_hparams=RANDOM_LISTENERS)
    if fixed == "frozen":
        canter.train("ppo", run_dir=tmp_path / "first", max_steps=300, **SHORT)
        common.update(policy_hparams={"listener": {"frozen": True}}, init_from=str(tmp_path / "first"))
    whole = canter.train("ppo", run_dir=tmp_path / "whole", max_steps=1200, **common)
    canter.train("ppo", run_dir=tmp_path / "part", max_steps=1200, hooks={"after_update": stop_at_300}, **common)
    resumed = canter.resume(tmp_path / "part")
    assert _same(whole, resumed)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[0]["episodes"] == summaries[1]["episodes"]
    returns = [pq.read_table(tmp_path / d / "evaluations.parquet").column("mean_return").to_pylist()
               for d in ("whole", "part")]
    assert returns[0] == returns[1] and len(returns[0]) >= 4


@pytest.mark.parametrize("hparams, needle", [
    ({"listener": {"algo": "randm"}}, "unknown algorithm 'randm'; did you mean 'random'"),
    ({"listener": {"algo": "random", "lr": 0.1}}, "takes no hyperparameters; drop lr"),
    ({"listener": {"algo": "random", "frozen": True}}, "takes no hyperparameters; drop frozen"),
    ({"listener": {"frozen": True}}, "keeps the weights that init_from loads: give init_from"),
    ({"listener": {"frozen": "yes"}}, "'policy_hparams.listener.frozen' is true or false, got 'yes'"),
    ({"listener": {"algo": "random"}, "speaker": {"algo": "random"}}, "every policy is fixed"),
])
def test_bad_fixed_policies_are_refused(hparams, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set",
                                            f"policy_hparams={json.dumps(hparams)}"], needle)


@pytest.mark.parametrize("factored", [False, True])
def test_a_random_policy_acts_under_action_masks(factored, tmp_path, capsys):
    """tests/match_agents.py raises on a masked action; its mask allows the target and one other choice, so a random
    agent earns about half of its 8 (with factored actions, each sub-action drawn among its own allowed entries)."""
    kwargs = {"n_agents": 2, "masked": True, "factored": factored}
    canter.train("ppo", env="pettingzoo:tests.match_agents", env_kwargs=kwargs, policies="agent", seed=0,
                 max_steps=1500, target_reward=None, run_dir=tmp_path / "run",
                 policy_hparams={"agent_1": {"algo": "random"}}, **{**HPARAMS["ppo"], "eval_every": 512})
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "4", "--json")
    assert code == 0, err
    history = pq.read_table(tmp_path / "run" / "history.parquet").to_pydict()
    random_returns = [r for r, a in zip(history["episode_return"], history["agent"]) if a == "agent_1"]
    assert len(random_returns) > 50 and 3.4 <= np.mean(random_returns) <= 4.6


def test_init_from_a_run_whose_policy_was_random(tmp_path, capsys):
    """Such a policy has no networks: learning it from there is refused in one line (it was 'unknown algorithm
    'random'; did you mean 'rainbow'?'); a run that keeps it random starts from the other policy's networks."""
    canter.train("ppo", run_dir=tmp_path / "first", max_steps=300, policy_hparams=RANDOM_LISTENERS, **SHORT)
    argv = ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set", f"init_from={tmp_path / 'first'}"]
    assert_train_refused(capsys, tmp_path, argv, "its policy 'listener' acted at random (algo: random) and has no "
                                                 "networks to load: give policy_hparams.listener.algo=random here too")
    trainer = canter.make_trainer("ppo", init_from=str(tmp_path / "first"), max_steps=300,
                                  policy_hparams=RANDOM_LISTENERS, **SHORT)
    assert _same(canter.load(tmp_path / "first").agents["speaker"], trainer.agent.agents["speaker"])
    trainer.close()


@pytest.mark.parametrize("deterministic", [True, False])
def test_an_evaluation_with_a_seed_repeats_a_random_policys_actions(deterministic):
    """canter.evaluate(agent, seed=0) of an agent with a random policy gave other returns each time (the random
    policy drew from generators of its own, and a sampled evaluation's seeded generator was ignored), where its
    docstring says the samples are reproducible with the seed: its draws now start from the seed."""
    trainer = canter.make_trainer("ppo", policy_hparams=RANDOM_LISTENERS, max_steps=64, **SHORT)
    agent = trainer.agent
    trainer.close()
    first, again = (canter.evaluate(agent, env=MIXED, episodes=6, seed=0, deterministic=deterministic).returns
                    for _ in range(2))
    assert first == again


def test_play_with_a_seed_repeats_a_random_policys_actions():
    """canter.play.play(agent, seed=3) twice gave other returns (the random listeners drew on from their own
    generator); each episode's random moves now follow its seed, as its env does."""
    from canter.play import play

    trainer = canter.make_trainer("ppo", policy_hparams=RANDOM_LISTENERS, max_steps=64, **SHORT)
    agent = trainer.agent
    trainer.close()
    assert play(agent, episodes=3, seed=3) == play(agent, episodes=3, seed=3)
    assert play(agent, episodes=3, seed=3)[1:] == play(agent, episodes=2, seed=4)  # episode i: seed + i's


def test_a_random_policy_predicts_on_the_envs_own_observations(tmp_path):
    """predict takes an observation as the env gives it (a Dict with its action mask), as a learning policy's does;
    a random policy's was a TypeError traceback (its draws read the mask from a packed array only)."""
    from tests.match_agents import MatchAgents

    run, masked = tmp_path / "run", {"n_agents": 2, "masked": True}
    canter.train("ppo", env="pettingzoo:tests.match_agents", env_kwargs=masked, policies="agent", seed=0,
                 max_steps=64, target_reward=None, run_dir=run, policy_hparams={"agent_1": {"algo": "random"}},
                 n_envs=1, n_steps=32, batch_size=32, n_epochs=1, eval_every=0, quiet=True)
    agent = canter.load(run)
    env = MatchAgents(**masked)
    obs, _ = env.reset(seed=0)
    allowed = set(np.flatnonzero(obs["agent_1"]["action_mask"]).tolist())
    for _ in range(20):
        assert int(agent.predict({"agent_1": obs["agent_1"]})["agent_1"]) in allowed
        assert set(agent.predict({"agent_1": [obs["agent_1"]] * 4}, deterministic=False)["agent_1"].tolist()) <= allowed
    with pytest.raises(canter.CanterError, match=r"policy 'agent_1': expected one observation of shape \(6,\)"):
        agent.predict({"agent_1": np.zeros((3, 7), np.float32)})
