"""eval_env_kwargs (--eval-env-kwargs): merged over env_kwargs for the evaluation env alone (Stable-Baselines3's
EvalCallback on an eval_env of its own), on every path that makes one: sync/async/native copies, Atari's native and
wrapper paths, an offline run's, a distributed learner's, a multi-policy run's; canter eval and canter.evaluate
evaluate on it; resumes keep it; runs saved before it existed resume (canter/envs/make.py make_eval_env)."""
from __future__ import annotations

import json

import gymnasium as gym
import pytest
import yaml

import canter
from canter.api import resume_trainer
from canter.errors import CanterError
from canter.registry import register
from support import assert_one_line_error, forget_run_key, run_cli

TINY = dict(max_steps=256, n_envs=2, eval_episodes=2, eval_envs=2, eval_every=0, n_steps=64, batch_size=64,
            n_epochs=1, net_arch=[8], tensorboard=False)
#: the kwargs each KwargsRecorder-test copy was made with
MADE: list[dict] = []


@register("env", "KwargsRecorder-test")
def _recorder(limit: int = 500, tag: str = "none") -> gym.Env:
    """CartPole cut at ``limit`` steps, recording the kwargs it was made with (``tag`` only recorded)."""
    MADE.append({"limit": limit, "tag": tag})
    return gym.make("CartPole-v1", max_episode_steps=limit)


def _trained(**kwargs):
    """A finished in-memory trainer (no run directory) of a tiny PPO CartPole run."""
    trainer = canter.make_trainer("ppo", kwargs.pop("env", "CartPole-v1"), run_dir=None, **{**TINY, **kwargs})
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    return trainer


def test_the_eval_env_gets_eval_env_kwargs_merged_over_env_kwargs_and_the_training_env_does_not():
    MADE.clear()
    _trained(env="KwargsRecorder-test", vectorization="sync", env_kwargs={"limit": 50, "tag": "train"},
             eval_env_kwargs={"tag": "eval"})
    assert MADE == [{"limit": 50, "tag": "train"}] * 2 + [{"limit": 50, "tag": "eval"}] * 2


@pytest.mark.parametrize("vectorization", ["sync", "native", "auto", "async"])
def test_evaluation_episodes_end_at_the_eval_env_s_own_time_limit(vectorization):
    trainer = _trained(vectorization=vectorization, n_envs=4, eval_env_kwargs={"max_episode_steps": 5})
    assert trainer.last_eval.lengths == [5, 5]
    assert max(trainer.recent_returns) > 5  # training episodes: CartPole's own limit (a reward of 1 per step)
    assert canter.evaluate(trainer.agent, episodes=3).lengths == [5, 5, 5]  # the run's evaluations' env


def test_an_in_process_distributed_learner_evaluates_on_the_eval_env():
    trainer = canter.make_trainer("impala", "CartPole-v1", run_dir=None, max_steps=256, n_envs=2, eval_episodes=2,
                                  eval_every=0, eval_env_kwargs={"max_episode_steps": 4}, tensorboard=False)
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    assert trainer.last_eval.lengths == [4, 4]


def test_canter_eval_evaluates_on_the_run_s_eval_env_and_the_run_keeps_it_when_resumed(tmp_path, capsys):
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", "128", "--quiet",
                           "--run-dir", str(run), "--eval-env-kwargs", "{max_episode_steps: 6}", "--set", "n_envs=2",
                           "--set", "n_steps=64", "--set", "batch_size=64", "--set", "tensorboard=false")
    assert code == 0, err
    assert yaml.safe_load((run / "config.yaml").read_text())["eval_env_kwargs"] == {"max_episode_steps": 6}
    code, out, err = run_cli(capsys, "eval", str(run), "--episodes", "2", "--json")
    assert code == 0, err
    assert json.loads(out)["lengths"] == [6, 6]
    code, out, err = run_cli(capsys, "eval", str(run), "--episodes", "2", "--json", "--env-kwargs",
                             "{max_episode_steps: 3}")  # --env-kwargs still win
    assert json.loads(out)["lengths"] == [3, 3]
    resumed = resume_trainer(run, max_steps=256)
    try:
        for _ in resumed():
            pass
    finally:
        resumed.close()
    assert resumed.trainer.run.eval_env_kwargs == {"max_episode_steps": 6}
    assert resumed.trainer.last_eval.lengths == [6] * 10  # eval_episodes: 10
    assert canter.load(run).run_config.eval_env_kwargs == {"max_episode_steps": 6}


def test_a_run_saved_before_eval_env_kwargs_existed_resumes(tmp_path):
    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, **{**TINY, "max_steps": 128, "checkpoint_every": 64})
    forget_run_key(run, "eval_env_kwargs")
    agent = canter.resume(run, max_steps=256)
    assert agent.run_config.eval_env_kwargs == {}
    assert yaml.safe_load((run / "config.yaml").read_text())["eval_env_kwargs"] == {}


def test_a_resume_may_not_change_eval_env_kwargs(tmp_path):
    run = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run, **{**TINY, "max_steps": 128})
    with pytest.raises(CanterError, match="'eval_env_kwargs' cannot change when a run is resumed"):
        canter.resume(run, max_steps=128, eval_env_kwargs={"max_episode_steps": 5})


@pytest.mark.parametrize("argv, needle", [
    (["--eval-env-kwargs", "{max_episod_steps: 5}"],
     "eval_env_kwargs {'max_episod_steps': 5}: bad env_kwargs for 'CartPole-v1'"),
    (["--eval-env-kwargs", "[1, 2]"], "--eval-env-kwargs needs a YAML mapping of argument names to values"),
    (["--set", "eval_env_kwargs=5"], "'eval_env_kwargs' must be a dict, got 5"),
])
def test_a_bad_eval_env_kwargs_is_one_line_and_writes_nothing(tmp_path, capsys, argv, needle):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", "64", "--quiet",
                           "--run-dir", str(tmp_path / "run"), *argv)
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def test_eval_env_kwargs_that_change_the_spaces_are_refused_in_one_line():
    with pytest.raises(CanterError, match=r"eval_env_kwargs \{'map_name': '8x8'\} change the env's spaces, which "
                       r"the policy cannot act in: the training env has Discrete\(16\) -> Discrete\(4\), the "
                       r"evaluation env has Discrete\(64\)"):
        canter.make_trainer("ppo", "FrozenLake-v1", run_dir=None, eval_env_kwargs={"map_name": "8x8"})


def test_a_multi_policy_run_evaluates_on_its_eval_env():
    pytest.importorskip("pettingzoo")
    trainer = _trained(env="pettingzoo:tests.mixed_agents", policies="type", n_steps=32,
                       eval_env_kwargs={"n_listeners": 3})  # a copy: 3 agents in training, 4 in evaluation
    assert (trainer.env.num_envs, trainer.eval_env.num_envs) == (2 * 3, 2 * 4)
    assert len(trainer.last_eval.returns) == 2 * 4


def test_an_offline_run_evaluates_on_its_eval_env(tmp_path):
    from canter.data.dataset import collect

    path = str(collect("CartPole-v1", 300, None, seed=0).save(tmp_path / "data"))
    trainer = canter.make_trainer("bc", None, dataset=path, max_steps=10, eval_every=10, eval_episodes=2,
                                  eval_env_kwargs={"max_episode_steps": 5})
    try:
        assert trainer.evaluate().lengths == [5, 5]
    finally:
        trainer.close()


@pytest.mark.filterwarnings("ignore:learning_starts")  # a run that only evaluates
@pytest.mark.parametrize("eval_kwargs", [{"max_episode_steps": 10},  # ale-py's native env takes it
                                         {"max_episode_steps": 10, "mode": 1}])  # only the wrapper path does
def test_an_atari_run_on_the_native_env_evaluates_on_its_eval_env(eval_kwargs):
    pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
    pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")
    trainer = canter.make_trainer("dqn", "ALE/Pong-v5", run_dir=None, vectorization="native", n_envs=1, max_steps=8,
                                  learning_starts=100, buffer_size=200, eval_episodes=1, eval_envs=1, eval_every=0,
                                  eval_env_kwargs=eval_kwargs, tensorboard=False)
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    assert trainer.last_eval.lengths == [10 - 2]  # Pong's reset takes two of the game's agent steps


def test_record_every_videos_are_evaluation_episodes_on_the_eval_env(tmp_path, monkeypatch):
    import canter.tools.video

    made = []

    def recorder(run_dir, env_id, every, env_kwargs, seed, vectorization):
        made.append(env_kwargs)
        raise KeyboardInterrupt  # the run is not needed past its loggers

    monkeypatch.setattr(canter.tools.video, "VideoRecorder", recorder)
    with pytest.raises(KeyboardInterrupt):
        canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", record_every=64,
                            env_kwargs={"max_episode_steps": 50, "sutton_barto_reward": True},
                            eval_env_kwargs={"max_episode_steps": 5})
    assert made == [{"max_episode_steps": 5, "sutton_barto_reward": True}]


def test_a_turn_based_game_evaluates_against_the_eval_env_s_opponent_and_not_against_self():
    pytest.importorskip("pettingzoo")
    game = "pettingzoo:pettingzoo.classic.tictactoe_v3"
    trainer = canter.make_trainer("ppo", game, run_dir=None, vectorization="sync", env_kwargs={"opponent": "self"},
                                  eval_env_kwargs={"opponent": "random", "seat": "player_2"}, eval_envs=1)
    try:
        assert trainer.eval_env.env.envs[0].get_wrapper_attr("seat_choice") == "player_2"
        assert trainer.env.env.envs[0].get_wrapper_attr("seat_choice") == "random"
    finally:
        trainer.close()
    with pytest.raises(CanterError, match="eval_env_kwargs opponent: self plays only in training"):
        canter.make_trainer("ppo", game, run_dir=None, vectorization="sync", eval_env_kwargs={"opponent": "self"})
