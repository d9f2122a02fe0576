"""Off-policy training frequency in episodes (``train_freq_unit: episode``, Stable-Baselines3's ``train_freq:
[N, episode]``) and ``gradient_steps: -1`` (one update per env step collected): the gradient steps the
definition gives, every off-policy algorithm, exact resumes, the warnings and the refused spellings."""
from __future__ import annotations

import json
import warnings
from collections import namedtuple
from enum import Enum

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.config import resolve_config
from canter.errors import CanterError
from canter.registry import lookup, names
from support import FixedLengthEnv, assert_one_line_error, run_cli

FIXED = "canter-test/FixedFive-v0"  # episodes of 5 steps: 6 vector steps each with the reset-only step


class FixedBoxActions(FixedLengthEnv):
    """:class:`FixedLengthEnv` with a Box action, for the continuous-action algorithms."""

    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)


for _id, _cls in ((FIXED, FixedLengthEnv), ("canter-test/FixedFiveBox-v0", FixedBoxActions)):
    if _id not in gym.registry:
        gym.register(_id, entry_point=_cls)
OFF_POLICY = [a for a in names("algorithm") if lookup("algorithm", a).family == "off_policy"]


def _env_of(algo: str) -> str:
    cls = lookup("algorithm", algo)
    if cls.multiagent_only:
        return "pettingzoo:tests.match_agents"
    return FIXED if gym.spaces.Discrete in cls.action_spaces else "canter-test/FixedFiveBox-v0"


def _phases(algo: str = "dqn", env: str = FIXED, max_steps: int = 60, n_envs: int = 1,
            **hparams: object) -> list[tuple[int, int, int]]:
    """``(step, episodes, gradient steps)`` after each iteration of a run with ``hparams``."""
    hparams = {"train_freq_unit": "episode", "learning_starts": 0, "batch_size": 4, **hparams}
    if algo not in ("qmix",):
        hparams.setdefault("net_arch", [8])
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=max_steps, n_envs=n_envs, eval_every=0,
                                  eval_episodes=0, quiet=True, hparams=hparams)
    return [(trainer.step, trainer.episode_count, trainer.algorithm.updates) for _ in trainer()]


def test_a_phase_lasts_until_train_freq_episodes_have_finished():
    """One env, 2 episodes a phase: the 1st ends at step 11 (5 + reset-only + 5), then every 12 steps; the last
    phase ends at max_steps (60). gradient_steps -1 takes one update per step collected: updates == steps."""
    assert _phases(train_freq=2, gradient_steps=-1) == [(s, e, s) for s, e in (
        (11, 2), (23, 4), (35, 6), (47, 8), (59, 10), (60, 10))]


def test_episodes_are_summed_over_env_copies_and_the_excess_is_not_carried():
    """Two copies end their episodes on the same vector step: 3 episodes a phase are reached with 4 (vector
    steps 5 and 11: 22 env steps), and the next phase counts from 0 again (not from the extra one)."""
    assert _phases(n_envs=2, train_freq=3, gradient_steps=-1) == [(22, 4, 22), (46, 8, 46), (60, 10, 60)]
    # 2 a phase: one vector step of two endings is enough (10 steps, then 12 each)
    assert [s for s, _, _ in _phases(n_envs=2, train_freq=2, gradient_steps=-1)] == [10, 22, 34, 46, 58, 60]


def test_fixed_gradient_steps_and_learning_starts_count_per_episode_phase():
    """gradient_steps 3 a phase; learning_starts 11: the phase ending at step 11 does not train (step >
    learning_starts, as Stable-Baselines3), every later one does."""
    assert _phases(train_freq=2, gradient_steps=3, learning_starts=11) == [
        (11, 2, 0), (23, 4, 3), (35, 6, 6), (47, 8, 9), (59, 10, 12), (60, 10, 15)]


@pytest.mark.usefixtures("restore_global_rngs")  # SB3's seed= reseeds the global generators
def test_episode_phases_end_after_the_episodes_stable_baselines3s_do():
    """One env, train_freq=(2, "episode"), gradient_steps=-1 in SB3 and canter: the phases end after the same
    episodes (2, 4, 6, ...); each takes SB3's updates (its env steps, 10) plus canter's reset-only steps (one per
    episode the phase began after: 1 in the first phase, 2 later)."""
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.callbacks import BaseCallback

    class Phases(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            ends.append((self.model._episode_num, self.model._n_updates))

    ends: list[tuple[int, int]] = []  # (episodes, updates) when each phase's collection ends, before its training
    model = sb3.DQN("MlpPolicy", FixedLengthEnv(), train_freq=(2, "episode"), gradient_steps=-1, learning_starts=0,
                    batch_size=4, seed=0)
    model.learn(50, callback=Phases())
    ours = _phases(train_freq=2, gradient_steps=-1, max_steps=59)
    assert [e for e, _ in ends] == [e for _, e, _ in ours] == [2, 4, 6, 8, 10]
    sb3_updates = np.diff([u for _, u in ends] + [model._n_updates])
    assert list(sb3_updates) == [10] * 5
    assert list(np.diff([0] + [u for _, _, u in ours])) == [10 + 1, 10 + 2, 10 + 2, 10 + 2, 10 + 2]


def test_gradient_steps_minus_one_with_step_phases():
    """-1 with train_freq 5 on 2 envs: 3 vector steps a phase (6 env steps), 6 updates each."""
    assert _phases(n_envs=2, train_freq=5, train_freq_unit="step", gradient_steps=-1, max_steps=30) == [
        (s, e, s) for s, e in ((6, 0), (12, 2), (18, 2), (24, 4), (30, 4))]


def test_the_dqn_fast_path_draws_each_episode_phase_at_once():
    """Uniform replay: one draw of batch_size x (the phase's env steps) rows, cut into that many minibatches;
    prioritized replay samples step by step (its priorities change between them)."""
    trainer = canter.make_trainer("dqn", FIXED, seed=0, max_steps=60, n_envs=1, eval_every=0, eval_episodes=0,
                                  quiet=True, hparams=dict(train_freq=[2, "episode"], gradient_steps=-1,
                                                           learning_starts=0, batch_size=4, net_arch=[8]))
    calls = []
    learn_phase = trainer.agent.learn_phase
    trainer.agent.learn_phase = lambda batch, steps: calls.append((len(batch.obs), steps)) or learn_phase(batch, steps)
    list(trainer())
    assert calls == [(4 * n, n) for n in (11, 12, 12, 12, 12)]  # the last phase, 1 step: one learn() call
    assert trainer.algorithm.updates == 60


@pytest.mark.parametrize("algo", OFF_POLICY)
def test_every_off_policy_algorithm_trains_per_episode_phase(algo):
    """Each phase ends once 2 episodes have finished since it began (or at max_steps), and takes one update
    per env step it collected."""
    env = _env_of(algo)
    records = _phases(algo, env, max_steps=120, n_envs=2, train_freq=2, gradient_steps=-1)
    last = (0, 0)
    for step, episodes, updates in records:
        assert updates == step
        assert episodes - last[1] >= 2 or step >= 120, (algo, records)
        last = (step, episodes)
    assert len(records) >= 3 and records[-1][0] >= 120


def test_gsde_draws_its_matrices_once_per_episode_phase():
    """sde_sample_freq -1 is once per collection phase; an episode phase's length is not train_freq env steps."""
    trainer = canter.make_trainer("sac", "canter-test/FixedFiveBox-v0", seed=0, max_steps=60, n_envs=1, eval_every=0,
                                  eval_episodes=0, quiet=True, hparams=dict(use_sde=True, train_freq=[2, "episode"],
                                                                            learning_starts=0, net_arch=[8]))
    drawn, phases = [], []
    weights = trainer.algorithm._exploration_weights
    trainer.algorithm._exploration_weights = lambda n: drawn.append(weights(n)) or drawn[-1]
    for _ in trainer():
        phases.append(len(drawn))
    distinct = [w for i, w in enumerate(drawn) if i == 0 or w is not drawn[i - 1]]
    assert phases == [11, 23, 35, 47, 59, 60] and len(distinct) == len(phases)


RESUMED = {
    "dqn": dict(prioritized=True, n_step=3, gradient_steps=-1, exploration_fraction=0.5),
    "sac": dict(use_sde=True, gradient_steps=2),
    "td3": dict(gradient_steps=-1),
}


@pytest.mark.parametrize("algo", [pytest.param("dqn", marks=pytest.mark.slow), "sac",  # (dqn, td3: 4-6 s)
                                  pytest.param("td3", marks=pytest.mark.slow)])
def test_an_interrupted_episode_phase_run_resumes_exactly(algo, tmp_path):
    """A run stopped (as Ctrl-C) and resumed equals the uninterrupted one: weights, counters, steps."""
    from canter.checkpoint import flatten_state

    env = "CartPole-v1" if algo == "dqn" else "Pendulum-v1"
    common = dict(env=env, seed=5, n_envs=2, eval_every=300, eval_episodes=1, quiet=True, max_steps=900,
                  env_kwargs={"max_episode_steps": 40}, learning_starts=64, batch_size=32, net_arch=[32],
                  train_freq=[3, "episode"], **RESUMED[algo])
    whole = canter.train(algo, run_dir=tmp_path / "whole", **common)

    def interrupt(trainer, losses):
        if trainer.step >= 400 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train(algo, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] < 900
    resumed = canter.resume(tmp_path / "part")
    (skeleton_a, a), (skeleton_b, b) = flatten_state(whole.state_dict()), flatten_state(resumed.state_dict())
    assert skeleton_a == skeleton_b and [k for k in a if not torch.equal(a[k], b[k])] == []
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True
    assert {k: summaries[0][k] for k in ("steps", "episodes", "updates")} == {
        k: summaries[1][k] for k in ("steps", "episodes", "updates")}


@pytest.mark.slow
def test_members_of_several_policies_resume_mid_episode_phase(tmp_path):
    """With policies: type each member counts its own agents' episodes; a member's phase under way at the break
    (its episodes so far: the speaker's, 2 of 3, when the listener's phase of 9 ends) is saved, so the resumed
    run equals the uninterrupted one."""
    pytest.importorskip("pettingzoo")
    from support import HPARAMS, MIXED

    common = dict(HPARAMS["dqn"], seed=5, eval_every=600, checkpoint_every=600, target_reward=None, policies="type",
                  max_steps=2400, learning_starts=100, train_freq=[3, "episode"], gradient_steps=-1, quiet=True,
                  policy_hparams={"listener": {"train_freq": 9}})  # 4 listener rows, 2 speaker ones: 3 and 2 ends
    seen = []

    def interrupt(trainer, losses):
        seen.append({p: m.phase_episodes for p, m in trainer.members.items()})
        if trainer.step >= 1200 and seen[-1]["speaker"] and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    whole = canter.train("dqn", env=MIXED, run_dir=tmp_path / "whole", **common)
    canter.train("dqn", env=MIXED, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    assert seen[-1] == {"listener": 0, "speaker": 2}  # the speaker was mid-phase when the run stopped
    resumed = canter.resume(tmp_path / "part")
    modules = [agent.algorithm.modules() for agent in (whole, resumed)]
    for name, module in modules[0].items():
        for x, y in zip(module.parameters(), modules[1][name].parameters()):
            assert torch.equal(x, y), name
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True
    assert {k: summaries[0][k] for k in ("steps", "episodes", "updates")} == {
        k: summaries[1][k] for k in ("steps", "episodes", "updates")}


Unit = Enum("TrainFrequencyUnit", {"STEP": "step", "EPISODE": "episode"})  # Stable-Baselines3's, as it has them
TrainFreq = namedtuple("TrainFreq", "frequency unit")


@pytest.mark.parametrize("given", [
    {"train_freq": (4, "episode")}, {"hparams": {"train_freq": [4, "episode"]}},
    {"sets": ["train_freq=[4, episode]"]}, {"sets": ["train_freq=(4, 'episode')"]},
    {"train_freq": TrainFreq(4, Unit.EPISODE)}, {"train_freq": 4, "train_freq_unit": "episode"},
])
def test_stable_baselines3_pair_sets_count_and_unit(given):
    _, cfg = resolve_config("sac", "Pendulum-v1", **given)
    assert (cfg.train_freq, cfg.train_freq_unit) == (4, "episode")


def test_the_pair_in_a_yaml_file_and_its_unit_over_a_plain_count(tmp_path):
    """A file's ``train_freq: [2, episode]``; a later plain count replaces the pair, its unit too (an int counts
    steps, as in Stable-Baselines3 and rl-zoo3's -params), unless train_freq_unit says episode; a later pair's
    unit wins over a train_freq_unit."""
    path = tmp_path / "c.yaml"
    path.write_text("hparams:\n  train_freq: [2, episode]\n")
    assert resolve_config("td3", "Pendulum-v1", config_file=path)[1].train_freq_unit == "episode"
    _, cfg = resolve_config("td3", "Pendulum-v1", config_file=path, sets=["train_freq=5"])
    assert (cfg.train_freq, cfg.train_freq_unit) == (5, "step")
    path.write_text("hparams:\n  train_freq_unit: episode\n")
    _, cfg = resolve_config("td3", "Pendulum-v1", config_file=path, sets=["train_freq=5"])
    assert (cfg.train_freq, cfg.train_freq_unit) == (5, "episode")
    _, cfg = resolve_config("td3", "Pendulum-v1", config_file=path, sets=["train_freq=[8, step]"])
    assert (cfg.train_freq, cfg.train_freq_unit) == (8, "step")
    assert resolve_config("dqn", "CartPole-v1")[1].train_freq_unit == "step"  # the default


@pytest.mark.parametrize("setting, needle", [
    ("train_freq_unit=episodes", "unknown value for 'hparams.train_freq_unit' 'episodes'; did you mean 'episode'?"),
    ("train_freq=[1, epsiode]", "'hparams.train_freq': unknown unit 'epsiode' (step or episode); did you mean "
                                "[1, episode]?"),
    ("train_freq=[1, 2, 3]", "must be a count, or Stable-Baselines3's pair [N, step] or [N, episode]"),
    ("train_freq=[0, episode]", "'hparams.train_freq' must be >= 1, got 0"),
    ("gradient_steps=0", "'hparams.gradient_steps' must be >= 1, or -1 (one per env step the phase collected), got 0"),
    ("gradient_steps=-2", "must be >= 1, or -1 (one per env step the phase collected), got -2"),
])
def test_bad_spellings_are_one_line_errors(capsys, setting, needle):
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--set", setting, "--quiet")
    assert_one_line_error(code, err, needle)


def test_explorers_refuse_episode_phases():
    with pytest.raises(CanterError, match=r"train_freq_unit: episode counts the episodes of one process's envs, "
                                          r"but explorers .*use train_freq_unit: step with --explorers$"):
        resolve_config("dqn", "CartPole-v1", train_freq=[1, "episode"], explorers=2)
    assert resolve_config("dqn", "CartPole-v1", gradient_steps=-1, explorers=2)[1].gradient_steps == -1


def test_budget_warnings_speak_of_episode_phases():
    """No 'less than one training phase' (an episode phase ends at max_steps at the latest); learning_starts at
    or past the last phase's end still never learns."""
    def told(**hparams: object) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            canter.make_trainer("dqn", FIXED, seed=0, max_steps=20, n_envs=2, eval_episodes=0, quiet=True,
                                hparams=dict(train_freq_unit="episode", net_arch=[8], **hparams)).close()
        return [str(w.message) for w in caught]

    assert told(train_freq=50, learning_starts=10) == []
    assert told(learning_starts=20) == ["learning_starts (20) >= max_steps (20): the run only collects random "
                                        "actions and never learns"]


@pytest.mark.slow
def test_sac_learns_pendulum_training_after_each_episode():
    """SAC trained after every episode with an update per env step (SB3's train_freq=(1, "episode"),
    gradient_steps=-1): seed 1 reached -188 at 3,014 steps (34-62 s on the shared 2-core host, 2026-11-27)."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", seed=1, learning_starts=100, net_arch=[64, 64],
                                  target_reward=-300, eval_every=1000, eval_episodes=10, max_steps=15_000,
                                  train_freq=(1, "episode"), gradient_steps=-1, quiet=True)
    list(trainer())
    trainer.close()
    assert trainer.best_eval_return >= -300, f"reached only {trainer.best_eval_return:.1f} in {trainer.step} steps"
    assert trainer.algorithm.updates == trainer.step  # every phase trained (the first ends at 201 > 100)


def test_apex_takes_one_update_per_arriving_env_step_for_minus_one():
    """--explorers (here the in-process pool, the same ApeXTrainer): gradient_steps -1 pays one update per env
    step of each rollout once the learner is past learning_starts (64: the rollout ending at 68 is the first)."""
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer
    from canter.envs import make_vec_env

    run, cfg = resolve_config("dqn", "CartPole-v1", hparams={"train_freq": 4, "gradient_steps": -1, "batch_size": 8,
                                                             "learning_starts": 64, "net_arch": [8]},
                              n_envs=1, max_steps=200, eval_every=0, eval_episodes=0)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    try:
        list(trainer())
    finally:
        trainer.close()
    assert trainer.step == 200 and trainer.algorithm.updates == 200 - 64


@pytest.mark.slow
def test_hindsight_dqn_solves_ten_bits_training_after_each_episode():
    """test_her's 10-bit task with hindsight replay, trained after each episode with an update per env step:
    -4.16 at 4,000 steps (an optimal policy averages about -4; 14 s, 2026-11-27)."""
    trainer = canter.make_trainer("dqn", "BitFlipping-v0", seed=0, max_steps=4000, eval_every=2000, eval_episodes=50,
                                  quiet=True, her_goals=4, learning_starts=500, buffer_size=100_000, batch_size=256,
                                  lr=1e-3, exploration_fraction=0.1, train_freq=[1, "episode"], gradient_steps=-1,
                                  exploration_final_eps=0.05, target_update_interval=500, gamma=0.95)
    list(trainer())
    trainer.close()
    assert trainer.best_eval_return >= -5.0
