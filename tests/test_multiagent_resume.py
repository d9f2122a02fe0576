"""Multi-agent runs across a resume and a divergence: exact resumes of one or several policies, masked
env snapshots, members of different rollout lengths, and the history's agent and policy columns."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_env, make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from support import ENV, HPARAMS, MIXED  # noqa: E402


@pytest.mark.parametrize("miss_leaves", [False, True])
def test_multiagent_run_resumes_exactly(miss_leaves, tmp_path):
    common = dict(env_kwargs={"n_agents": 2, "miss_leaves": miss_leaves}, n_envs=2, seed=5, eval_every=512, checkpoint_every=512, n_steps=64,
                  batch_size=64, n_epochs=2, target_reward=None)
    whole = canter.train("ppo", env=ENV, run_dir=tmp_path / "whole", max_steps=2048, **common)
    canter.train("ppo", env=ENV, run_dir=tmp_path / "part", max_steps=1024, **common)
    resumed = canter.resume(tmp_path / "part", max_steps=2048)
    for a, b in zip(whole.algorithm.modules()["model"].parameters(), resumed.algorithm.modules()["model"].parameters()):
        assert torch.equal(a, b)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[0]["episodes"] == summaries[1]["episodes"]
    with pytest.raises(CanterError, match="multi-agent env: it has no single-agent env to record"):
        make_env(ENV)


@pytest.mark.parametrize("policies", ["shared", "agent", "joint"])
def test_a_masked_env_is_snapshot_exactly_for_resume(policies):
    """Dict observations with action masks (packed per group) must not stop an exact resume."""
    from canter.envs.state import capture_env, restore_env

    kwargs = {"n_agents": 3, "masked": True, "miss_leaves": True}
    rng = np.random.default_rng(0)
    envs = [make_vec_env(ENV, 2, env_kwargs=kwargs, policies=policies) for _ in range(2)]
    obs = envs[0].reset(seed=4)
    envs[1].reset(seed=9)

    def actions(obs):  # an allowed action per agent (the mask is the last 3 columns of each row)
        def pick(rows):
            allowed = rows[..., -3:] > 0.5
            return np.where(allowed, rng.random(allowed.shape), -1).argmax(-1)
        return {p: pick(o) for p, o in obs.items()} if isinstance(obs, dict) else pick(
            obs[:, :-1] if policies == "joint" else obs)

    for _ in range(5):
        obs = envs[0].step(actions(obs)).obs
    state, problems = capture_env(envs[0])
    assert problems == []
    restore_env(envs[1], state)
    for _ in range(12):  # through departures and autoresets
        act = actions(obs)
        a, b = envs[0].step(act), envs[1].step(act)
        for x, y in ([(a.obs[p], b.obs[p]) for p in a.obs] if isinstance(a.obs, dict) else [(a.obs, b.obs)]):
            np.testing.assert_array_equal(x, y)
        obs = a.obs
    np.testing.assert_array_equal(envs[0].finished_returns, envs[1].finished_returns)
    for env in envs:
        env.close()


def _interrupt_at(step):
    def after_update(trainer, losses):
        if trainer.step >= step and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"  # as Ctrl-C does: the run saves checkpoints/last and stops
    return after_update


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_run_of_several_policies_resumes_exactly(algo, tmp_path):
    common = dict(HPARAMS[algo], seed=5, eval_every=600, checkpoint_every=600, target_reward=None, policies="agent",
                  max_steps=2400)
    if algo == "dqn":  # each policy counts its own steps: learning starts well before the break, and with 4
        # listener rows (2 vector steps per update) against 2 speaker rows (3) the break falls mid-cycle
        common.update(learning_starts=100, train_freq=6, policies="type")
    whole = canter.train(algo, env=MIXED, run_dir=tmp_path / "whole", **common)
    canter.train(algo, env=MIXED, run_dir=tmp_path / "part", hooks={"after_update": _interrupt_at(1200)}, **common)
    part = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert part["stop_reason"] == "interrupted" and 1200 <= part["steps"] < 2400
    resumed = canter.resume(tmp_path / "part")
    assert resumed.policies == (["listener", "speaker"] if algo == "dqn" else ["listener_0", "listener_1", "speaker_0"])
    modules = [agent.algorithm.modules() for agent in (whole, resumed)]  # every policy's, "policy.name"
    assert sorted(modules[0]) == sorted(modules[1]) and len(modules[0]) >= 2
    for name, module in modules[0].items():
        for a, b in zip(module.parameters(), modules[1][name].parameters()):
            assert torch.equal(a, b), name
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True
    assert {k: summaries[0][k] for k in ("steps", "episodes", "updates", "best_eval_return")} == {
        k: summaries[1][k] for k in ("steps", "episodes", "updates", "best_eval_return")}


def test_members_of_different_rollout_lengths_resume_exactly_mid_cycle(tmp_path):
    """agent_1 collects 48 steps per rollout, agent_0 64: at an iteration's end agent_1 is part-way
    through a rollout, whose rows the checkpoint must keep (they were lost: a short rollout padded
    with empty rows); a member's episodes are not kept twice (its own list grew for the whole run)."""
    def interrupt(trainer, losses):
        if trainer.step >= 256 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    common = dict(env_kwargs={"n_agents": 2}, policies="agent", seed=5, n_envs=2, n_steps=64, batch_size=64,
                  n_epochs=1, eval_every=0, max_steps=1024, quiet=True, policy_hparams={"agent_1": {"n_steps": 48}})
    whole = canter.train("ppo", env=ENV, run_dir=tmp_path / "whole", **common)
    canter.train("ppo", env=ENV, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    meta = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert meta["steps"] < 1024
    resumed = canter.resume(tmp_path / "part")
    for p in whole.agents:
        a, b = (x.agents[p].algorithm.modules()["model"].parameters() for x in (whole, resumed))
        assert all(torch.equal(x, y) for x, y in zip(a, b)), p
    summaries = [json.loads((tmp_path / r / "summary.json").read_text()) for r in ("whole", "part")]
    assert summaries[0]["updates"] == summaries[1]["updates"] and summaries[1]["resume_exact"] is True
    trainer = canter.make_trainer("ppo", ENV, **{k: v for k, v in common.items() if k != "quiet"})
    for _ in trainer():
        pass
    trainer.close()
    assert all(not m._pending for m in trainer.members.values())


def test_an_inexact_resume_drops_a_members_rollout_in_progress():
    """When the env's state could not be saved, the resumed run starts fresh episodes: a member's rollout
    in progress (agent_1: 48 steps per rollout against 64) must not continue across that reset (its
    last restored row, not done, bootstrapped GAE from the new episodes)."""
    common = dict(env_kwargs={"n_agents": 2}, policies="agent", seed=5, n_envs=2, n_steps=64, batch_size=64,
                  n_epochs=1, eval_every=0, max_steps=1024, policy_hparams={"agent_1": {"n_steps": 48}})
    trainer = canter.make_trainer("ppo", ENV, **common)
    next(iter(trainer()))  # one iteration: every member updated once; agent_1 is 16 steps into its next rollout
    state = trainer.resume_state()
    trainer.close()
    assert trainer.members["agent_1"].buffer.pos == 16
    state["env"] = None  # as for an env that cannot be snapshot (canter.envs.state)
    seen = {}

    def on_train_start(t):
        seen.update({p: (m.buffer.pos, m.collected) for p, m in t.members.items()}, exact=t.resume_exact)

    resumed = canter.make_trainer("ppo", ENV, hooks={"on_train_start": on_train_start}, **common)
    resumed.resume_from(state)
    next(iter(resumed()))
    resumed.close()
    assert seen == {"agent_0": (0, 0), "agent_1": (0, 0), "exact": False}


def test_a_members_divergence_names_its_policy_at_the_runs_step(monkeypatch):
    import tests.mixed_agents as mixed
    from canter.trainers.guard import TrainingDiverged

    step = mixed.MixedAgents.step

    def poisoned(self, actions):  # the speaker's reward is NaN on the 40th step
        obs, rew, term, trunc, info = step(self, actions)
        self.n = getattr(self, "n", 0) + 1
        if self.n == 40:
            rew = {a: float("nan") if a.startswith("speaker") else r for a, r in rew.items()}
        return obs, rew, term, trunc, info

    monkeypatch.setattr(mixed.MixedAgents, "step", poisoned)
    trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, batch_size=16, n_epochs=1,
                                  max_steps=400, eval_every=0, eval_episodes=1, target_reward=None)
    with pytest.raises(TrainingDiverged, match="policy 'speaker'") as err:
        for _ in trainer():
            pass
    trainer.close()
    assert err.value.step == sum(m.step for m in trainer.members.values())  # the run's count, not the speaker's


def test_a_restored_divergence_in_one_policys_update_leaves_every_policy_on_the_same_step():
    """The listener's update diverges (restored) on the step where both policies' rollouts end: the
    speaker, after it in the loop, used to miss that env step for good (its step 31 of the listener's 64, a
    transition from a stale observation next), and the run acted on the observations before it."""
    from canter.trainers.guard import Divergence

    trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, batch_size=16, n_epochs=1,
                                  max_steps=400, eval_every=0, eval_episodes=1, target_reward=None,
                                  divergence_guard="restore")
    listener = trainer.members["listener"].algorithm
    learn, calls = listener.learn, []

    def flaky(batch):
        calls.append(1)
        if len(calls) == 2:
            raise Divergence("gradient of listener.test", 0)
        return learn(batch)

    listener.learn = flaky
    records = trainer()
    for _ in range(3):
        next(records)
    members = trainer.members
    assert len(trainer.guard.events) == 1 and len(calls) == 3
    assert (members["listener"].step, members["speaker"].step, trainer.step) == (96, 48, 144)
    for policy, obs in zip(trainer.env.policies, trainer.env.env._outputs()):
        np.testing.assert_array_equal(trainer.obs[policy], obs)  # the run acts on the env's current observations
    trainer.close()


@pytest.mark.parametrize("policies", ["shared", "type"])
def test_history_names_each_episodes_agent_and_policy(policies, tmp_path):
    """history.parquet had one row per agent and episode and no way to tell whose: a competitive env's
    per-agent returns were lost in the mix. A resumed run keeps the columns."""
    env = ENV if policies == "shared" else MIXED
    common = dict(seed=3, max_steps=1536, n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_every=0,
                  target_reward=None, policies=policies)
    run = tmp_path / "run"
    canter.train("ppo", env=env, run_dir=run, hooks={"after_update": _interrupt_at(700)}, **common)
    canter.resume(run)
    assert json.loads((run / "summary.json").read_text())["resume_exact"] is True
    table = pq.read_table(run / "history.parquet").to_pydict()
    possible = ["agent_0", "agent_1"] if policies == "shared" else ["speaker_0", "listener_0", "listener_1"]
    assert set(table["agent"]) == set(possible)
    counts = {a: table["agent"].count(a) for a in possible}
    assert len(set(counts.values())) == 1 and min(counts.values()) >= 10  # every agent's episodes end together
    if policies == "shared":
        assert "policy" not in table
    else:
        assert table["policy"] == [a.rsplit("_", 1)[0] for a in table["agent"]]  # policies: type -> speaker, listener
        speaker = [r for r, a in zip(table["episode_return"], table["agent"]) if a == "speaker_0"]
        assert all(0 <= r <= 8 for r in speaker)
