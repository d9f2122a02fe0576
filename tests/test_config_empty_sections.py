"""A file's mapping or list run key left empty (env_kwargs:, callbacks:, hooks:, policy_hparams:) is {} / [], as a
file's empty hparams: is: they were refused ("'env_kwargs' must be a dict, got null")."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


@pytest.mark.parametrize("key, empty", [("env_kwargs", {}), ("eval_env_kwargs", {}), ("hooks", {}),
                                        ("policy_hparams", {}), ("callbacks", []), ("imports", [])])
def test_an_empty_mapping_or_list_key_in_a_file_is_empty(tmp_path, key, empty):
    for text in (f"{key}:\n", f"{key}: null\n"):
        path = tmp_path / "run.yaml"
        path.write_text(f"env: CartPole-v1\n{text}hparams:\n")
        run, _ = resolve_config("ppo", config_file=path)
        assert getattr(run, key) == empty


def test_an_entry_set_over_an_empty_file_key_is_kept(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("env: CartPole-v1\nenv_kwargs:\n")
    run, _ = resolve_config("ppo", config_file=path, sets=["env_kwargs.max_episode_steps=100", "target_reward=90"])
    assert run.env_kwargs == {"max_episode_steps": 100}


def test_an_empty_hyperparameter_and_a_python_none_are_still_refused(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("env: CartPole-v1\nhparams:\n  clip_range:\n")
    with pytest.raises(CanterError, match="clip_range"):
        resolve_config("ppo", config_file=path)
    with pytest.raises(CanterError, match="'env_kwargs' must be a dict, got None"):
        resolve_config("ppo", "CartPole-v1", env_kwargs=None, from_python=True)
