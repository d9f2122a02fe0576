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


def test_an_empty_mapping_or_list_key_in_a_benchmark_files_set_is_empty(tmp_path):
    """A benchmark file's set (top level, or an env's) is a file's too: its 'env_kwargs:' left empty was still
    "'env_kwargs' must be a dict, got null", where a config file's is {}."""
    from canter.tools.bench_spec import check_cells, load_spec

    path = tmp_path / "bench.yaml"
    path.write_text("algos: [ppo]\nseeds: 1\nset:\n  eval_env_kwargs:\n  callbacks:\n"
                    "envs:\n  - CartPole-v1:\n      env_kwargs:\n")
    (config,) = check_cells(load_spec(path)).values()
    assert (config["env_kwargs"], config["eval_env_kwargs"], config["callbacks"]) == ({}, {}, [])
