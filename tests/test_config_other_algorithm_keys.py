"""Another algorithm's hyperparameter given to one without it is named as such, not answered with the canter key
of the other library's name it looks most like (config_errors._other_name)."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


@pytest.mark.parametrize("item", ["learning_starts=100", "hparams.learning_starts=100"])
def test_dqns_learning_starts_for_ppo_names_the_algorithms_that_have_it(item):
    """It was "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')": a wrong key to set."""
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    message = str(info.value)
    assert "ppo has no hyperparameter 'learning_starts'" in message and "dqn" in message
    assert "calls it" not in message


def test_another_librarys_misspelt_name_is_still_named_as_canter_calls_it():
    with pytest.raises(CanterError, match=r"canter calls it 'hparams\.lr'"):
        resolve_config("ppo", "CartPole-v1", sets=["learnin_rate=1e-3"])


@pytest.mark.parametrize("item", ["learning_start=100", "hparams.learnings_starts=100"])
def test_a_misspelling_of_another_algorithms_hyperparameter_is_not_named_as_another_librarys(item):
    """learning_start for PPO looks most like DQN's learning_starts, but the closest spellings were taken among other
    libraries' names and canter's own keys only: "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')"."""
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    message = str(info.value)
    assert "learning_starts'?" in message and "ppo has no hyperparameter 'learning_starts'" in message
    assert "calls it" not in message
