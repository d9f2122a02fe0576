"""A misspelt hparams section holding another library's name (hparam.learning_rate) names canter's key for it, as
hparams.learning_rate does, not the closest spelling of the name (config_errors.misspelt_section)."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


@pytest.mark.parametrize("item, meant, wrong", [
    ("hparam.learning_rate=1e-3", "'hparams.lr'", "clip_range"),  # was "did you mean 'hparams.clip_range'?"
    ("hparms.discount_factor=0.9", "'hparams.gamma'", "'hparams.n_epochs'"),
    ("hparam.total_timesteps=5000", "'max_steps'", "'hparams."),  # a run key: named at the top level
])
def test_another_librarys_name_under_a_misspelt_hparams_is_named_as_canter_calls_it(item, meant, wrong):
    """The name was answered with its closest spelling among the hyperparameters."""
    with pytest.raises(CanterError, match="canter calls it") as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert meant in str(info.value) and wrong not in str(info.value)


def test_a_misspelt_hparams_in_a_file_names_canters_key(tmp_path):
    """The same from a config file's dotted key."""
    f = tmp_path / "run.yaml"
    f.write_text("hparam.learning_rate: 0.001\n")
    with pytest.raises(CanterError, match=r"canter calls it 'hparams\.lr' \(Stable-Baselines3's 'learning_rate'\)"):
        resolve_config("ppo", "CartPole-v1", config_file=f)
