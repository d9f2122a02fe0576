"""A shipped preset's target_reward kept on an env the user changed (env_kwargs) is warned about in one line: PPO's
CartPole-v1 475 cannot be reached with max_episode_steps 100, and the run ended "not solved" without a word why."""
import warnings

import pytest

import canter
from canter.errors import CanterWarning


def _warnings(**given):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer("ppo", "CartPole-v1", run_dir=None, n_envs=1, **given)
    run = trainer.run
    trainer.close()
    said = [str(w.message) for w in caught if issubclass(w.category, CanterWarning)]
    return run, [line for line in said if "preset" in line]


@pytest.mark.parametrize("given", [{"sets": ["env_kwargs.max_episode_steps=100"]},
                                   {"sets": ["env_kwargs={max_episode_steps: 100}"]},
                                   {"env_kwargs": {"max_episode_steps": 100}},
                                   {"sets": ["eval_env_kwargs.max_episode_steps=100"]}])
def test_a_presets_target_on_changed_env_kwargs_is_warned_about(given):
    run, said = _warnings(**given)
    assert run.target_reward == 475
    assert len(said) == 1 and "target_reward 475" in said[0] and "preset" in said[0]
    assert "--target-reward" in said[0] and "max_episode_steps=100" in said[0] and "\n" not in said[0]


@pytest.mark.parametrize("given", [{}, {"sets": ["env_kwargs.max_episode_steps=100", "target_reward=90"]},
                                   {"env_kwargs": {}}, {"target_reward": 475, "env_kwargs": {"max_episode_steps": 100}},
                                   {"eval_env_kwargs": {"render_mode": "rgb_array"}}])
def test_no_warning_without_changed_env_or_with_the_users_own_target(given):
    assert _warnings(**given)[1] == []


def test_the_cli_prints_it_in_one_line(tmp_path, capsys):
    from canter.cli import main

    code = main(["train", "ppo", "--env", "CartPole-v1", "--set", "env_kwargs.max_episode_steps=100", "--max-steps",
                 "1", "--set", "eval_every=1", "--set", "eval_episodes=1", "--set", "eval_envs=1", "--n-envs", "1",
                 "--set", "hparams.n_steps=8", "--set", "hparams.batch_size=8", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 0
    assert [line for line in err.splitlines() if "target_reward 475" in line][0].startswith("canter: warning: ")


def test_a_bad_input_is_refused_alone(tmp_path, capsys):
    """The warning came before a misspelt env argument's one-line error, making it two lines."""
    from canter.cli import main

    code = main(["train", "ppo", "--env", "CartPole-v1", "--set", "env_kwargs.max_episod_steps=100", "--run-dir",
                 str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "max_episod_steps" in err
