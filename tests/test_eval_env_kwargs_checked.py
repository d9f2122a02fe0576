"""eval_env_kwargs are checked even where a run makes no evaluation env (eval_episodes: 0)."""

from __future__ import annotations

import canter
from support import assert_train_refused


def test_a_typo_in_eval_env_kwargs_is_refused_without_evaluations(capsys, tmp_path):
    """With eval_episodes 0 no eval env was made, so a key its constructor does not take went unnoticed until
    canter eval (or a video) of the run used them."""
    assert_train_refused(capsys, tmp_path, ["train", "dqn", "--env", "CartPole-v1", "--max-steps", "64", "--set",
                                            "eval_episodes=0", "--set", "eval_env_kwargs={max_episode_stepz: 10}"],
                         "did you mean 'max_episode_steps'?")


def test_good_eval_env_kwargs_without_evaluations_train(tmp_path):
    canter.train("dqn", env="CartPole-v1", max_steps=64, eval_episodes=0, run_dir=tmp_path / "run", quiet=True,
                 eval_env_kwargs={"max_episode_steps": 10}, learning_starts=0, train_freq=16)
    assert (tmp_path / "run" / "summary.json").exists()
