"""Another library's name for a run setting given under ``hparams`` or one policy's ``policy_hparams``: the error
named canter's key ('canter calls it 'checkpoint_every'') without saying it is a run setting, given at the top level
(and shared by every policy), as canter's own run keys there are answered."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("env, sets, said", [
    ("pettingzoo:tests.mixed_agents", ["policies=type", "policy_hparams.speaker.save_freq=5"],
     "unknown config key 'policy_hparams.speaker.save_freq'; canter calls it 'checkpoint_every' (Stable-Baselines3's "
     "'save_freq', which counts its callback's calls, one per vector step: checkpoint_every counts the env steps of "
     "all the env copies, so checkpoint_every = save_freq x n_envs), a run setting, shared by every policy, not a "
     "hyperparameter: give it at the top level "
     "('checkpoint_every: ...' in YAML, --set checkpoint_every=...)"),
    ("pettingzoo:tests.mixed_agents", ["policies=type", "policy_hparams.listener.training_num=4"],
     "canter calls it 'n_envs' (Tianshou's 'training_num'), a run setting, shared by every policy, not a "
     "hyperparameter: give it at the top level ('n_envs: ...' in YAML, --set n_envs=...)"),
    ("CartPole-v1", ["hparams.total_timesteps=5"],
     "canter calls it 'max_steps' (Stable-Baselines3's 'total_timesteps'), a run setting, not a hyperparameter: "
     "give it at the top level ('max_steps: ...' in YAML, --set max_steps=...)"),
])
def test_a_run_setting_under_hparams_is_said_to_be_one(env, sets, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", env, sets=sets)
    assert said in str(info.value)


@pytest.mark.parametrize("sets, said", [
    (["save_freq=5"], "canter calls it 'checkpoint_every' (Stable-Baselines3's 'save_freq', which counts its "
                      "callback's calls, one per vector step: checkpoint_every counts the env steps of all the env "
                      "copies, so checkpoint_every = save_freq x n_envs)"),
    (["hparams.learning_rate=1e-3"], "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')"),
])
def test_top_level_keys_and_hyperparameters_are_not_called_run_settings(sets, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=sets)
    assert str(info.value).endswith(said)


def test_the_command_line_says_it_in_one_line(capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "pettingzoo:tests.mixed_agents", "--set", "policies=type",
                           "--set", "policy_hparams.speaker.save_freq=5", "--quiet")
    assert_one_line_error(code, err, "a run setting, shared by every policy, not a hyperparameter",
                          "--set checkpoint_every=...")
