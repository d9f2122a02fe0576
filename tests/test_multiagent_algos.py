"""Several policies trained by different algorithms (``policy_hparams.<policy>.algo``): a PPO speaker with DQN
listeners learns, saves, loads, evaluates and resumes exactly; what cannot train as one policy is refused."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.algorithms.dqn import DQN  # noqa: E402
from canter.algorithms.ppo import PPO  # noqa: E402
from support import HPARAMS, MIXED, assert_train_refused, run_cli, stop_at_300  # noqa: E402

#: the listeners learn by DQN (HPARAMS' DQN settings) while the run's algorithm, PPO, trains the speaker
DQN_LISTENERS = {"listener": {"algo": "dqn", **{k: v for k, v in HPARAMS["dqn"].items() if k not in
                                                ("n_envs", "eval_every")}}}
EYES = {"listener": np.eye(4, dtype=np.float32), "speaker": np.eye(3, dtype=np.float32)}


def test_a_ppo_speaker_and_dqn_listeners_learn_their_tasks(tmp_path, capsys):
    """Random play earns 8/3 (speaker) and 4 (listeners) of 8; each policy learns with its own algorithm."""
    agent = canter.train("ppo", env=MIXED, policies="type", policy_hparams=DQN_LISTENERS, seed=0, max_steps=12_000,
                         target_reward=7.9, run_dir=tmp_path / "run", **HPARAMS["ppo"])
    assert isinstance(agent.agents["listener"].algorithm, DQN) and isinstance(agent.agents["speaker"].algorithm, PPO)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["solved"] and summary["best_eval_return"] >= 7.9
    actions = agent.predict(EYES)
    np.testing.assert_array_equal(actions["listener"], [0, 1, 0, 1])
    np.testing.assert_array_equal(actions["speaker"], [0, 1, 2])
    loaded = canter.load(tmp_path / "run")  # rebuilt with each policy's algorithm
    assert isinstance(loaded.agents["listener"].algorithm, DQN)
    again = loaded.predict(EYES)
    assert all(np.array_equal(actions[p], again[p]) for p in actions)
    loaded.agents["listener"].save(tmp_path / "listener")  # one policy alone loads as a run of its own algorithm
    alone = canter.load(tmp_path / "listener")
    assert isinstance(alone.algorithm, DQN)
    np.testing.assert_array_equal(alone.predict(EYES["listener"]), [0, 1, 0, 1])
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "2", "--json")
    assert code == 0 and json.loads(out)["mean_return"] >= 7.9, err


@pytest.mark.slow
def test_policies_of_different_algorithms_resume_exactly(tmp_path):
    """Stopped mid-rollout of the PPO speaker, with the DQN listeners updating; init_from takes each policy's
    networks (about 3 s)."""
    listeners = {"listener": {**DQN_LISTENERS["listener"], "learning_starts": 64}}
    common = dict(env=MIXED, policies="type", policy_hparams=listeners, seed=3, target_reward=None,
                  **{**HPARAMS["ppo"], "n_envs": 2, "eval_every": 0})
    whole = canter.train("ppo", run_dir=tmp_path / "whole", max_steps=600, **common)
    part = canter.train("ppo", run_dir=tmp_path / "part", max_steps=600, hooks={"after_update": stop_at_300},
                        **common)
    assert part.agents["listener"].algorithm.updates > 0 and part.agents["speaker"].algorithm.updates > 0
    assert part.algorithm.updates < whole.algorithm.updates  # stopped before the end
    resumed = canter.resume(tmp_path / "part")
    for a, b in zip(whole.algorithm.modules().values(), resumed.algorithm.modules().values()):
        assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True
    started = canter.make_trainer("ppo", init_from=str(tmp_path / "whole"), **common)  # each policy's networks
    for a, b in zip(whole.algorithm.modules().values(), started.agent.algorithm.modules().values()):
        assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    started.close()


@pytest.mark.parametrize("listener, needle", [
    ({"algo": "impala"}, "'policy_hparams.listener.algo: impala': impala (async) cannot train one of several"),
    ({"algo": "qmix"}, "'policy_hparams.listener.algo: qmix': a policy of its own algorithm is an independent"),
    ({"algo": "dqnn"}, "'policy_hparams.listener.algo': unknown algorithm 'dqnn'"),
    ({"algo": "dqn", "n_steps": 64}, "'policy_hparams.listener.n_steps'"),  # dqn's keys, not the run's ppo's
    ({"algo": "sac"}, "policy 'listener'"),  # sac acts in Box spaces; the listeners' is Discrete
])
def test_a_policy_algorithm_that_cannot_train_it_is_refused(listener, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set",
                                            f"policy_hparams={json.dumps({'listener': listener})}"], needle)


def test_a_policy_algorithm_named_as_the_runs_is_the_runs():
    """'PPO' in a ppo run is the run's algorithm, with its hparams (it was a policy of its own, from PPO's
    defaults: lr 0.0003, not the run's 0.001)."""
    trainer = canter.make_trainer("ppo", env=MIXED, policies="type", lr=1e-3, n_envs=1, eval_episodes=0,
                                  policy_hparams={"listener": {"algo": "PPO"}, "speaker": {"algo": "DQN"}})
    assert trainer.agent.agents["listener"].algorithm.config.lr == 1e-3
    assert isinstance(trainer.agent.agents["speaker"].algorithm, DQN)
    assert trainer.run.policy_hparams == {"listener": {"algo": "ppo"}, "speaker": {"algo": "dqn"}}  # as recorded
    trainer.close()


def test_tune_and_benchmark_check_each_policy_with_its_own_algorithm():
    """Their check of the algorithm against the env's spaces refused a sac run whose Discrete policies are dqn's,
    which canter train runs ('policy 'listener': SAC needs a Box action space')."""
    from canter.config import resolve_config
    from canter.tools.checks import check_algo_env

    both = {"listener": {"algo": "dqn"}, "speaker": {"algo": "dqn"}}
    run, _ = resolve_config("sac", MIXED, policies="type", policy_hparams=both)
    check_algo_env(run.algo, run.env, run.env_kwargs, run.policies, run.central_state, run)
    run, _ = resolve_config("sac", MIXED, policies="type", policy_hparams={"listener": {"algo": "dqn"}})
    with pytest.raises(canter.CanterError, match="policy 'speaker': SAC needs a Box action space"):
        check_algo_env(run.algo, run.env, run.env_kwargs, run.policies, run.central_state, run)
