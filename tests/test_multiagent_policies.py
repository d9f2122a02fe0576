"""Several policies (policies: type | agent): grouping agents, evaluation counts, policy modes, each
policy's own schedules, statistics and hyperparameters, and play."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.trainers.evaluation import evaluate  # noqa: E402
from support import ENV, HPARAMS, MIXED, assert_one_line_error, assert_train_refused, run_cli  # noqa: E402


def test_policies_group_agents_by_type_with_their_own_spaces_and_rows():
    env = make_vec_env(MIXED, 2, policies="type", env_kwargs={"n_listeners": 2})
    assert env.policies == ["listener", "speaker"] and env.num_envs == 6
    assert env.single_observation_space["listener"].shape == (4,) and env.single_action_space["speaker"].n == 3
    obs = env.reset(seed=3)
    assert obs["listener"].shape == (4, 4) and obs["speaker"].shape == (2, 3)  # 2 copies x 2 listeners, x 1 speaker
    total = {"listener": np.zeros(4), "speaker": np.zeros(2)}
    for _ in range(8):  # every agent answers correctly: 1 per agent and step
        step = env.step({"listener": obs["listener"].argmax(1) % 2, "speaker": obs["speaker"].argmax(1)})
        for p in total:
            assert step.steps[p].valid.all() and np.all(step.steps[p].reward == 1.0)
            total[p] += step.steps[p].reward
        obs = step.obs
    assert step.steps["speaker"].truncated.all() and step.steps["listener"].truncated.all()
    assert env.finished_returns.tolist() == [8.0] * 6 and sorted(env.finished_envs.tolist()) == list(range(6))
    reset = env.step({"listener": np.zeros(4, np.int64), "speaker": np.zeros(2, np.int64)})
    assert not any(s.valid.any() for s in reset.steps.values()) and env.finished_envs.size == 0
    env.close()
    per_agent = make_vec_env(MIXED, 1, policies="agent")
    assert per_agent.policies == ["listener_0", "listener_1", "speaker_0"]
    per_agent.close()


class _ListenersRightSpeakerSilent:
    """Listeners answer correctly (8 per episode); the speaker names no target (0 per episode)."""

    def predict(self, obs):
        return {p: o.argmax(1) % 2 if p == "listener" else np.full(len(o), -1) for p, o in obs.items()}


@pytest.mark.parametrize("copies, episodes", [(5, 5), (5, 10), (4, 6)])
def test_evaluation_counts_every_agent_of_each_episode(copies, episodes):
    """An evaluation episode is a copy's episode, and every agent's return in it counts, so the mean
    averages over every agent (it counted sub-envs: the last rows, the speaker alone at 5 of 5)."""
    env = make_vec_env(MIXED, copies, policies="type")  # rows: the copies' listeners, then their speakers
    result = evaluate(_ListenersRightSpeakerSilent(), env, episodes, seed=0)
    env.close()
    assert sorted(result.returns) == [0.0] * episodes + [8.0] * (2 * episodes)
    assert result.mean_return == pytest.approx(16 / 3)
    assert result.episodes == episodes  # canter eval's 'over N episodes': it said 3 x episodes


class _FirstAgentRight:
    """agent_0 matches its target (8 per episode), agent_1 never acts validly (0 per episode)."""

    def predict(self, obs):
        actions = obs.argmax(1)
        actions[1::2] = -1  # rows are copy-major: agent_1 of every copy
        return actions


def test_shared_policy_evaluation_counts_every_agent_of_each_episode():
    env = make_vec_env(ENV, 3, env_kwargs={"n_agents": 2})
    result = evaluate(_FirstAgentRight(), env, 4, seed=0)  # 4 episodes over 3 copies of 2 agents
    env.close()
    assert sorted(result.returns) == [0.0] * 4 + [8.0] * 4
    assert result.episodes == 4


def test_policy_modes_are_checked(capsys):
    with pytest.raises(CanterError, match="pass --set policies=type"):
        make_vec_env(MIXED, 1)  # one shared policy for agents with different spaces
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "'policies: type' is for multi-agent envs")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", MIXED, "--set", "policies=team", "--quiet")
    assert_one_line_error(code, err, "policies")
    code, _, err = run_cli(capsys, "train", "impala", "--env", MIXED, "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "cannot train several policies")
    code, _, err = run_cli(capsys, "train", "ddpg", "--env", MIXED, "--set", "policies=type", "--quiet")
    assert_one_line_error(code, err, "policy 'listener'")


def test_learning_rate_control_reaches_every_policy_at_its_own_step():
    trainer = canter.make_trainer("ppo", env=MIXED, policies="type", seed=0, max_steps=6_000, lr_decay="linear",
                                  **HPARAMS["ppo"])
    records = trainer()
    next(records)
    members = trainer.members
    assert members["listener"].step == 2 * members["speaker"].step  # 2 listeners per copy, 1 speaker
    rates = {p: m.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] for p, m in members.items()}
    # each policy's budget is its share of max_steps, so both are the same fraction into their decay
    assert rates["listener"] == pytest.approx(rates["speaker"]) and rates["listener"] < HPARAMS["ppo"].get("lr", 3e-4)
    trainer.lr.reduce(0.5)  # what a plateau or a divergence restore does
    trainer.lr.apply(trainer.step)
    halved = {p: m.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] for p, m in members.items()}
    assert halved == pytest.approx({p: r / 2 for p, r in rates.items()})
    assert set(trainer.lr.current()) == {"listener.optimizer.0", "speaker.optimizer.0"}
    trainer.close()


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_each_policy_logs_the_learning_rate_its_optimizer_uses(algo):
    """A single-policy run logs ``learning_rate``, the rate its optimizer uses under ``lr_decay`` (DQN, which
    reports none, gets one). A multi-policy run logged PPO's configured rate (3e-4 all along) and nothing for DQN:
    each policy's now, as ``policy/learning_rate``, as its other statistics are named."""
    hp = {**HPARAMS[algo], "learning_starts": 64} if algo == "dqn" else HPARAMS[algo]
    trainer = canter.make_trainer(algo, env=MIXED, policies="type", seed=0, max_steps=3_000, lr_decay="linear",
                                  **{**hp, "eval_every": 10**9})
    base = hp.get("lr", 3e-4)
    try:
        losses = next(r.losses for r in trainer() if all(f"{p}/loss" in r.losses or f"{p}/value_loss" in r.losses
                                                         for p in trainer.members))
        assert "learning_rate" not in losses
        for p, m in trainer.members.items():
            used = next(iter(m.lr.current().values()))
            assert losses[f"{p}/learning_rate"] == pytest.approx(used) and used < base
    finally:
        trainer.close()


def test_raising_max_steps_between_calls_stretches_every_policys_schedules():
    """A later call after raising ``trainer.run.max_steps`` continues (Trainer.__call__); each policy's
    budget is its share of the new budget, as a shared policy's is the whole (its linear learning rate
    was stuck at 0, the old share's end, for the rest of the run)."""
    trainer = canter.make_trainer("ppo", env=ENV, policies="agent", seed=0, max_steps=64, n_envs=1, n_steps=16,
                                  batch_size=32, n_epochs=1, lr_schedule="linear", eval_every=10**9, eval_episodes=1)
    for _ in trainer():
        pass
    rates = {p: m.algorithm.lr for p, m in trainer.members.items()}
    assert trainer.step == 64 and rates == {"agent_0": 0.0, "agent_1": 0.0}
    trainer.run.max_steps = 128
    next(trainer())  # one more rollout per policy: 48 of its 64 steps, a quarter of its initial rate left
    assert trainer.step == 96
    assert {p: m.algorithm.lr for p, m in trainer.members.items()} == pytest.approx(
        {"agent_0": 7.5e-5, "agent_1": 7.5e-5})
    trainer.close()


@pytest.mark.parametrize("env_id, policies", [(ENV, "shared"), (MIXED, "type")])
def test_reward_normalisation_tracks_one_return_per_agent(env_id, policies):
    """The discounted returns behind reward scaling are one per sub-env: 2 copies x 2 agents here,
    not one per copy (that mismatch crashed before)."""
    trainer = canter.make_trainer("ppo", env=env_id, policies=policies, n_envs=2, max_steps=512, normalize_reward=True,
                                  n_steps=64, batch_size=64, n_epochs=1, eval_every=0, eval_episodes=1)
    records = list(trainer())
    assert records[-1].step >= 512
    agents = [trainer.agent] if policies == "shared" else list(trainer.agent.agents.values())
    assert sorted(len(a._returns) for a in agents) == ([4] if policies == "shared" else [2, 4])
    trainer.close()


@pytest.mark.parametrize("algo, policies", [("ppo", "shared"), ("ppo", "agent"), ("dqn", "shared")])
def test_observation_statistics_skip_the_rows_of_agents_that_left(algo, policies):
    """``normalize_obs`` counts each real observation once, as in a single-agent env (whose every row
    counts but the final observation a reset-only step acts on, as SB3's VecNormalize): a departed agent's rows, which
    repeat its final observation until its copy resets, are not observations (DQN: its random warm-up too)."""
    kwargs = dict(n_steps=8) if algo == "ppo" else dict(learning_starts=16, train_freq=4, batch_size=8)
    trainer = canter.make_trainer(algo, ENV, env_kwargs={"n_agents": 2, "miss_leaves": True}, policies=policies,
                                  seed=0, n_envs=1, max_steps=32, normalize_obs=True, eval_every=0, **kwargs)
    steps = []
    step = trainer.env.step
    trainer.env.step = lambda actions: steps.append(step(actions)) or steps[-1]
    list(trainer())
    # rows acted on: the reset's 2, then after each step but the last the agents that took part in it and did not
    # finish (their next observation; a final one is not counted) or 2 where the step reset the copy
    real, alive = 2, np.ones(2, bool)
    for s in steps[:-1]:
        s = s if policies == "shared" else [*s.steps.values()]
        valid = s.valid if policies == "shared" else np.concatenate([v.valid for v in s])
        done = (s.terminated | s.truncated) if policies == "shared" else np.concatenate(
            [v.terminated | v.truncated for v in s])
        alive = np.ones(2, bool) if not alive.any() else alive & ~done
        real += 2 if not valid.any() and alive.all() else int((valid & ~done).sum())
    agents = [trainer.agent] if policies == "shared" else list(trainer.agent.agents.values())
    counted = sum(a.obs_rms.count for a in agents) - 1e-4 * len(agents)
    assert real < 2 * len(steps)  # agents left early
    assert counted == pytest.approx(real)
    trainer.close()


@pytest.mark.parametrize("algo,policies", [("ppo", "shared"), ("dqn", "agent"), ("qmix", "joint")])
def test_play_records_one_copy_with_every_policy(algo, policies, tmp_path, capsys):
    """canter play on a multi-agent run: one env copy, its agents acting as in training; a video per episode."""
    extra = {"policies": policies} if policies != "joint" else {}
    canter.train(algo, env=ENV, env_kwargs={"n_agents": 2}, seed=0, max_steps=20_000, target_reward=7.5 if
                 algo != "qmix" else 15.0, run_dir=tmp_path / "run", **extra,
                 **(HPARAMS[algo] if algo in HPARAMS else {"n_envs": 4, "eval_every": 2_000}))
    code, out, err = run_cli(capsys, "play", str(tmp_path / "run"), "--episodes", "2", "--video-dir",
                             str(tmp_path / "vid"))
    assert code == 0, err
    returns = [float(line.split("return ")[1].split()[0]) for line in out.splitlines() if line.startswith("episode")]
    assert len(returns) == 2 and min(returns) >= (7.0 if algo != "qmix" else 14.0)  # per agent; QMIX: the team's
    videos = sorted(p.name for p in (tmp_path / "vid").iterdir())
    assert videos == ["play-episode-0.mp4", "play-episode-1.mp4"]
    assert all((tmp_path / "vid" / v).stat().st_size > 1000 for v in videos)


def test_policy_hparams_set_each_policys_own_hyperparameters(tmp_path):
    """policy_hparams over hparams, per policy: its own learning rate, network and rollout length,
    kept by canter.load (the checkpoint's networks have each policy's widths)."""
    overrides = {"agent_0": {"lr": 0.01, "net_arch": [16]}, "agent_1": {"n_steps": 32}}
    trainer = canter.make_trainer("ppo", ENV, env_kwargs={"n_agents": 2}, policies="agent", policy_hparams=overrides,
                                  seed=0, max_steps=2048, n_envs=2, n_steps=64, batch_size=64, eval_every=0,
                                  run_dir=tmp_path / "run")
    for _ in trainer():
        pass
    trainer.close()
    members = trainer.trainer.members  # make_trainer with a run_dir gives the Run wrapping the trainer
    cfg = {p: m.config for p, m in members.items()}
    assert (cfg["agent_0"].lr, cfg["agent_0"].net_arch, cfg["agent_0"].n_steps) == (0.01, [16], 64)
    assert (cfg["agent_1"].lr, cfg["agent_1"].net_arch, cfg["agent_1"].n_steps) == (3e-4, [64, 64], 32)
    assert members["agent_1"].buffer.n_steps == 32 and members["agent_0"].buffer.n_steps == 64
    loaded = canter.load(tmp_path / "run")
    widths = {p: [w.shape[-1] for w in a.algorithm.model.body.weights] for p, a in loaded.agents.items()}
    assert widths == {"agent_0": [16, 16], "agent_1": [64, 64, 64]}


@pytest.mark.parametrize("setting,needle", [
    ("{agent_9: {lr: 0.01}}", "unknown policy in policy_hparams 'agent_9'"),
    ("{agent_0: {lrr: 0.01}}", "policy_hparams.agent_0.lr"),
    ("{agent_0: {lr: -1}}", "policy_hparams.agent_0.lr"),
    ("{agent_0: 3}", "'policy_hparams.agent_0' must be a mapping"),
    # policies of agent IDs 0 and 1 are named '0' and '1', but YAML reads an unquoted 0 as a number
    ("{0: {lr: 0.01}}", "'policy_hparams' must have string keys, got 0: quote it, '0'"),
    # the algorithm config's own checks named the key 'hparams.net_arch', which the user had not set
    ("{agent_0: {net_arch: []}}", "'policy_hparams.agent_0.net_arch' needs at least one hidden layer"),
    # a run key was 'unknown config key ... did you mean n_epochs?', where hparams.n_envs names it a run setting
    ("{agent_0: {n_envs: 4}}", "'policy_hparams.agent_0.n_envs' is a run setting, shared by every policy"),
])
def test_bad_policy_hparams_are_one_line(setting, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--set", "policies=agent", "--set",
                                            f"policy_hparams={setting}"], needle)


def test_an_unknown_policy_among_many_says_what_the_policies_are(capsys, tmp_path):
    """With more than 12 policies and no close name the hint was "run 'canter list' to see them", which lists
    registered components, not an env's agents."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--env-kwargs", "{n_agents: 13}", "--set",
                                            "policies=agent", "--set", "policy_hparams={zqxjw: {lr: 0.01}}"],
                         "13 choices; the policies are the env's agents: agent_0, agent_1, ")


def test_a_policys_encoder_under_a_central_state_must_be_split(capsys, tmp_path):
    """hparams.encoder=flat is refused with central_state; a policy's own encoder was not (its actor then
    read the global state)."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", MIXED, "--set", "policies=type", "--set",
                                            "central_state=true", "--set", "encoder=split", "--set",
                                            "policy_hparams={speaker: {encoder: flat}}"],
                         "policy_hparams.speaker.encoder must be split")


def test_policy_hparams_need_several_policies(capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", ENV, "--set", "policy_hparams={agent_0: {lr: 1}}"],
                         "needs policies: type or agent")


def test_a_policys_buffer_too_big_for_memory_names_the_policy_and_its_setting(capsys, tmp_path):
    """The error said 'lower hparams.buffer_size' for a buffer_size set in policy_hparams, naming no policy."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", MIXED, "--set", "policies=type", "--set",
                           "policy_hparams={speaker: {buffer_size: 1000000000000}}", "--quiet", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "policy 'speaker': the replay buffer does not fit in memory")
    assert "lower policy_hparams.speaker.buffer_size (it is 1000000000000)" in err
    assert not (tmp_path / "run").exists()


def test_a_policys_budget_warning_names_its_own_setting():
    """The warning said 'hparams.batch_size (100,000) is larger than one rollout' for a batch_size that
    policy_hparams had set."""
    with pytest.warns(UserWarning, match=r"policy 'speaker' .*: policy_hparams\.speaker\.batch_size \(100,000\)"):
        trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, max_steps=48,
                                      policy_hparams={"speaker": {"batch_size": 100_000}})
    trainer.close()


def test_one_policy_of_a_multi_policy_run_saves_as_a_single_agent(tmp_path):
    """agents['speaker'] of a loaded multi-policy run had no run metadata, so its save() was refused ('save an
    agent that canter.train or canter.load returned', which it was); it now saves as a run of that one policy,
    with its own hyperparameters and spaces, and loads back as a single Agent that acts as it did."""
    canter.train("ppo", MIXED, run_dir=tmp_path / "run", max_steps=128, n_envs=2, n_steps=32, batch_size=64,
                 n_epochs=1, eval_every=0, tensorboard=False, sets=["policies=type", "policy_hparams={speaker: {lr: 0.01}}"])
    speaker = canter.load(tmp_path / "run").agents["speaker"]
    speaker.save(tmp_path / "speaker")
    one = canter.load(tmp_path / "speaker")
    assert type(one) is canter.agents.Agent and one.run_config.policies == "shared" and one.algorithm.config.lr == 0.01
    assert one.observation_space == speaker.observation_space and one.action_space == speaker.action_space
    obs = np.random.default_rng(0).random((5, 3), dtype=np.float32)
    assert np.array_equal(one.predict(obs), speaker.predict(obs))


def test_one_policys_agent_of_a_training_run_is_not_evaluated_on_the_runs_env():
    """Since trainers give their agent its run_config (canter.evaluate(trainer.agent) in a loop or callback), each
    policy's agent got its member trainer's, and canter.evaluate of it ran the multi-agent env with one policy's
    agent: the packing error of a Dict observation. It is refused as before; the group evaluates."""
    group = canter.train("ppo", MIXED, run_dir=None, max_steps=64, n_envs=1, n_steps=32, batch_size=32, n_epochs=1,
                         eval_every=0, eval_episodes=1, sets=["policies=type"])
    with pytest.raises(CanterError, match="evaluate takes an agent that canter.train, canter.load or canter.make_agent returned"):
        canter.evaluate(group.agents["speaker"], episodes=1)
    assert canter.evaluate(group, episodes=1).episodes == 1


def test_one_policy_of_a_loaded_run_names_what_to_evaluate_instead(tmp_path):
    """canter.evaluate and play of agent.agents[policy] said to pass an agent that canter.load returned, which it was:
    the error names the policy and what acts instead (the group; save a learning policy alone)."""
    from canter.play import play

    canter.train("ppo", MIXED, run_dir=tmp_path / "run", max_steps=64, n_envs=1, n_steps=32, batch_size=32,
                 n_epochs=1, eval_every=0, eval_episodes=1, quiet=True, sets=["policies=type"],
                 policy_hparams={"listener": {"algo": "random"}})
    group = canter.load(tmp_path / "run")
    for act in (lambda p: canter.evaluate(group.agents[p], episodes=1), lambda p: play(group.agents[p])):
        with pytest.raises(CanterError, match=r"policy 'speaker' of a multi-policy agent.*agents\['speaker'\]\.save"):
            act("speaker")
        with pytest.raises(CanterError, match=r"policy 'listener' of a multi-policy agent, .*of the run\)$"):
            act("listener")  # a random policy has no weights to save
    assert canter.evaluate(group, episodes=1).episodes == 1


def test_a_policys_budget_warning_gives_the_run_its_steps():
    """A policy's budget warning ended 'the run takes 16 steps', the policy's own rollout: the run took 48 (its
    3 agent rows step together, 16 vector steps each). It now gives both."""
    with pytest.warns(UserWarning) as caught:
        trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, max_steps=30,
                                      eval_episodes=0)
    with trainer:
        steps = [record.step for record in trainer()]
    said = [str(w.message) for w in caught if "max_steps" in str(w.message)]
    assert steps[-1] == 48
    assert said and all(m.endswith("the run at least 48") for m in said), said
    assert any("policy 'speaker'" in m and "this policy takes 16 of its steps" in m for m in said), said


def test_a_bad_observation_given_to_predict_names_its_policy():
    """predict's error for one policy's observations did not say whose they were ('expected one observation of
    shape (3,) ...' among several policies); it now names the policy."""
    trainer = canter.make_trainer("ppo", MIXED, policies="type", n_envs=1, n_steps=16, max_steps=48, eval_episodes=0)
    with trainer:
        agent = trainer.agent
        good = {"listener": np.zeros((2, 4), np.float32), "speaker": np.zeros((1, 3), np.float32)}
        assert set(agent.predict(good)) == {"listener", "speaker"}
        with pytest.raises(CanterError, match=r"^policy 'speaker': expected one observation of shape \(3,\)"):
            agent.predict({**good, "speaker": np.zeros(4, np.float32)})
        with pytest.raises(CanterError, match=r"^policy 'listener': "):
            agent.predict({"listener": np.zeros((2, 3), np.float32)}, deterministic=False)


ODD_LISTENERS = '''
import functools
from gymnasium import spaces
from tests.mixed_agents import MixedAgents


class OddListeners(MixedAgents):
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (5,), "float32") if agent == "listener_1" else super().observation_space(agent)


def parallel_env(**kwargs):
    return OddListeners(**kwargs)
'''


def test_a_policy_mode_that_does_not_fit_names_no_set_flag_to_commands_that_act(tmp_path, capsys, monkeypatch):
    """eval, play and collect (and canter.evaluate) of one policy saved out of a multi-policy run said 'pass --set
    policies=type', a flag those commands refuse; they now say what fits them (training keeps the flag's hint)."""
    canter.train("ppo", MIXED, run_dir=tmp_path / "run", max_steps=96, n_envs=1, n_steps=32, batch_size=32,
                 n_epochs=1, eval_every=0, tensorboard=False, sets=["policies=type"])
    canter.load(tmp_path / "run").agents["speaker"].save(tmp_path / "speaker")
    shared = "have different observation spaces; one shared policy needs one: pad them"
    multi = "a single policy saved out of a multi-policy run acts there only: use that run's own checkpoint"
    with pytest.raises(CanterError) as info:
        canter.evaluate(canter.load(tmp_path / "speaker"), episodes=1)
    assert shared in str(info.value) and multi in str(info.value) and "--set" not in str(info.value)
    for command in (["eval"], ["play", "--episodes", "1"]):
        err = assert_one_line_error(*run_cli(capsys, *command, str(tmp_path / "speaker"))[::2], shared, multi)
        assert "--set" not in err
    for run in ([str(tmp_path / "speaker")], ["--env", MIXED]):  # collect acts with one policy: no multi-policy hint
        err = assert_one_line_error(*run_cli(capsys, "collect", *run, "--out", str(tmp_path / "data"),
                                             "--transitions", "8")[::2], shared)
        assert "--set" not in err and "multi-policy" not in err
    (tmp_path / "odd_listeners.py").write_text(ODD_LISTENERS)  # the run's 'listener' agents of different spaces
    monkeypatch.syspath_prepend(str(tmp_path))
    err = assert_one_line_error(*run_cli(capsys, "eval", str(tmp_path / "run"), "--env",
                                         "pettingzoo:odd_listeners")[::2], "'listener' agents", "policies: type")
    assert "--set" not in err
