"""Keys that are other things' settings, answered with canter's: gymnasium.make's max_episode_steps (whose closest
spelling, max_steps, is the run's step budget) and Stable-Baselines3's save_freq and log_interval."""
from __future__ import annotations

import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from support import assert_one_line_error, run_cli

ENV_KWARGS = ("it is an argument of the env's gymnasium.make, given in env_kwargs (env_kwargs: {max_episode_steps: "
              "...} in YAML, --set env_kwargs.max_episode_steps=...)")


@pytest.mark.parametrize("algo,key", [("ppo", "max_episode_steps"), ("dqn", "max_episode_steps"),
                                      ("ppo", "hparams.max_episode_steps")])
def test_max_episode_steps_as_a_config_key_is_pointed_at_env_kwargs(algo, key):
    """It was "did you mean 'max_steps' ...?": max_steps: 200 makes a run of 200 steps, not episodes of 200."""
    with pytest.raises(CanterError, match=f"^unknown config key '{key}': " + ENV_KWARGS.replace("{", r"\{").replace(
            "(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        resolve_config(algo, "CartPole-v1", sets=[f"{key}=200"])


def test_max_episode_steps_as_a_flag_is_pointed_at_env_kwargs(capsys):
    """canter train --max-episode-steps 200 was answered "did you mean '--max-steps' ...?"."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-episode-steps", "200")
    assert_one_line_error(code, err, "max_episode_steps is an argument of the env's gymnasium.make: --env-kwargs "
                                     "'{max_episode_steps: VALUE}' (or --set env_kwargs.max_episode_steps=VALUE)")


@pytest.mark.parametrize("key,ours", [("save_freq", "checkpoint_every"), ("log_interval", "log_every")])
def test_stable_baselines3_names_are_answered_with_canters(key, ours):
    """save_freq (CheckpointCallback's) was "did you mean 'sde_sample_freq'? ppo has no hyperparameter ...", and
    log_interval (learn's) "did you mean 'target_update_interval'? ..."."""
    with pytest.raises(CanterError, match=f"unknown config key '{key}'; canter calls it '{ours}' "
                                          f"\\(Stable-Baselines3's '{key}'[,)]"):
        resolve_config("ppo", "CartPole-v1", sets=[f"{key}=1000"])
