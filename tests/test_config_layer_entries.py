"""One config layer giving a mapping setting both whole and by entry (env_kwargs: {...} and env_kwargs.NAME)."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


@pytest.mark.parametrize("text", [
    "env_kwargs.max_episode_steps: 50\nenv_kwargs: {sutton_barto_reward: true}\n",
    "env_kwargs: {sutton_barto_reward: true}\nenv_kwargs.max_episode_steps: 50\n",
])
def test_a_files_entry_of_a_mapping_setting_is_kept_whatever_the_order(tmp_path, text):
    """The whole mapping written below an entry replaced it: max_episode_steps 50 was dropped without a word."""
    f = tmp_path / "run.yaml"
    f.write_text(text)
    run, _ = resolve_config("ppo", "CartPole-v1", f)
    assert run.env_kwargs == {"sutton_barto_reward": True, "max_episode_steps": 50}
    run, _ = resolve_config("ppo", "CartPole-v1", **{"env_kwargs.max_episode_steps": 50,
                                                      "env_kwargs": {"sutton_barto_reward": True}})
    assert run.env_kwargs == {"sutton_barto_reward": True, "max_episode_steps": 50}


def test_an_entry_given_whole_and_by_name_in_one_file_is_refused(tmp_path):
    """'env_kwargs.max_episode_steps: 50' and 'env_kwargs: {max_episode_steps: 60}' in one file kept one of them
    silently (which one depended on the order), as a hyperparameter given twice in one file is refused."""
    f = tmp_path / "run.yaml"
    f.write_text("env_kwargs.max_episode_steps: 50\nenv_kwargs:\n  max_episode_steps: 60\n")
    with pytest.raises(CanterError, match=r"'env_kwargs.max_episode_steps' and 'env_kwargs: \{max_episode_steps: "
                                          r"\.\.\.\}' both set 'env_kwargs.max_episode_steps' in .*run.yaml; give it once"):
        resolve_config("ppo", "CartPole-v1", f)


def test_set_keeps_its_order_last_wins():
    """--set items apply in their order (a later one wins), the whole mapping too."""
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["env_kwargs.max_episode_steps=50",
                                                        "env_kwargs={sutton_barto_reward: true}"])
    assert run.env_kwargs == {"sutton_barto_reward": True}
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["env_kwargs={max_episode_steps: 60}",
                                                        "env_kwargs.max_episode_steps=50"])
    assert run.env_kwargs == {"max_episode_steps": 50}


def test_each_set_hparams_mapping_sets_its_entries():
    """A second --set hparams={...} replaced the first (the same --set key, the last one kept): lr of
    --set hparams={lr: 0.1} --set hparams={n_steps: 64} was the preset's 0.00166, without a word, where a file's
    hparams: sets only its entries. Each entry now counts as its own --set, in order with their aliases."""
    _, cfg = resolve_config("ppo", "CartPole-v1", sets=["hparams={lr: 0.1}", "hparams={n_steps: 64}"])
    assert (cfg.lr, cfg.n_steps) == (0.1, 64)
    _, cfg = resolve_config("ppo", "CartPole-v1", sets=["hparams={lr: 1.0}", "lr=0.2", "hparams={n_steps: 64}"])
    assert (cfg.lr, cfg.n_steps) == (0.2, 64)
    _, cfg = resolve_config("ppo", "CartPole-v1", sets=["lr=0.2", "hparams={lr: 0.3}"])
    assert cfg.lr == 0.3
