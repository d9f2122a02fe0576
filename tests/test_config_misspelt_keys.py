"""Misspelt config keys at every nesting level: the error names the key as it should be spelt."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("item, meant", [
    ("hparam.lr=1e-3", "'hparams.lr'"),
    ("hparms.lr=1e-3", "'hparams.lr'"),
    ("Hparams.lr=1e-3", "'hparams.lr'"),
    ("hparam.lrr=1e-3", "'hparams.lr'"),
    ("env_kwarg.max_episode_steps=5", "'env_kwargs.max_episode_steps'"),
    ("env-kwargs.max_episode_steps=5", "'env_kwargs.max_episode_steps'"),
    ("policy_hparam.adversary.lr=1e-3", "'policy_hparams.adversary.lr'"),
])
def test_a_misspelt_section_of_a_dotted_key_is_named_with_the_rest_of_the_key(item, meant):
    """The whole dotted key was compared with the config's keys: 'hparam.lr' was answered "did you mean
    'policy_hparams'?" (a multi-agent setting), 'env_kwarg.max_episode_steps' "'eval_episodes'"."""
    with pytest.raises(CanterError, match="did you mean") as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert meant in str(info.value)
    assert "'policy_hparams'" not in str(info.value) and "eval_episodes" not in str(info.value)


def test_a_misspelt_hparams_section_in_a_file_names_hparams(tmp_path, capsys):
    """A file's 'hparam: {lr: ...}' was answered "did you mean 'policy_hparams'?": 'hparams' was no candidate."""
    f = tmp_path / "run.yaml"
    f.write_text("hparam:\n  lr: 0.001\n")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "-f", str(f), "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "unknown config key 'hparam'; did you mean 'hparams'")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name, meant", [
    ("learning_rate", "canter calls it 'policy_hparams.listener.lr' (Stable-Baselines3's 'learning_rate')"),
    ("discount_factor", "canter calls it 'policy_hparams.listener.gamma' (Tianshou's 'discount_factor')"),
    ("verbose", "(Stable-Baselines3's): canter shows progress unless --quiet"),
])
def test_another_librarys_name_for_one_policys_hyperparameter_is_named_as_in_hparams(name, meant):
    """hparams.learning_rate is answered "canter calls it 'hparams.lr'"; one policy's learning_rate was "did you
    mean 'policy_hparams.listener.clip_range'?", the closest spelling, which sets something else."""
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "pettingzoo:tests.mixed_agents",
                       sets=["policies=type", f"policy_hparams.listener.{name}=0.001"])
    assert meant in str(info.value)
    assert "clip_range" not in str(info.value)


def test_an_entry_of_a_stable_baselines3_mapping_is_named_as_that_mapping():
    """--set policy_kwargs.net_arch=[64] was answered "did you mean 'env_kwargs.net_arch'?" (its first part compared
    with canter's mappings), where --set policy_kwargs={...} says what SB3's policy_kwargs are here."""
    with pytest.raises(CanterError, match=r"unknown config key 'policy_kwargs.net_arch' \(Stable-Baselines3's\): its "
                                          r"entries are hyperparameters of their own, such as net_arch"):
        resolve_config("ppo", "CartPole-v1", sets=["policy_kwargs.net_arch=[64]"])


def test_a_dotted_key_far_from_every_section_is_not_offered_one():
    """model_kwargs.x is no misspelt env_kwargs: 'env_kwargs.x' is not offered as what it meant."""
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=["model_kwargs.x=1"])
    assert "env_kwargs.x" not in str(info.value)
