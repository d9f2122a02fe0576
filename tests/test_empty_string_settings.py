"""A string setting that takes a name or a path given empty was taken as '' by resolve_config: ``--set init_from=``
was then read as the current directory ("init_from: '.' is not a canter run directory"), ``--set
wandb_project=`` was passed to wandb.init as the project '', ``--set env=`` fell through to ``--env``'s env and
``--set ray_address=`` was answered about explorers. None of them has a meaning for '': each is refused in one line
saying 'got an empty value', as a number's empty ``--set`` is."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("item, said", [
    ("env=", "'env' got an empty value; give an environment id (e.g. CartPole-v1)"),
    ("wandb_project=", "'wandb_project' got an empty value; give a W&B project name (default: canter)"),
    ("wandb_project= ", "'wandb_project' got an empty value; give a W&B project name (default: canter)"),
    ("init_from=", "'init_from' got an empty value; give a run directory or checkpoint to start from (null: new "
                   "weights)"),
    ("ray_address=", "'ray_address' got an empty value; give 'auto', host:port or ray://host:port (null: a local "
                     "Ray)"),
    ("dataset=", "'dataset' is only for offline algorithms (bc, cql, td3bc); ppo learns from the env"),
])
def test_an_empty_name_or_path_is_refused(item, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert str(info.value) == said


@pytest.mark.parametrize("kwargs, key", [
    ({"env": ""}, "env"), ({"env": "CartPole-v1", "init_from": " "}, "init_from"),
    ({"env": "CartPole-v1", "wandb_project": ""}, "wandb_project"),
])
def test_pythons_empty_strings_are_refused_too(kwargs, key):
    with pytest.raises(CanterError, match=f"^'{key}' got an empty value; give "):
        resolve_config("ppo", **kwargs)


def test_a_files_empty_env_does_not_fall_through(tmp_path):
    (tmp_path / "c.yaml").write_text("env: ''\n")
    with pytest.raises(CanterError, match="^'env' got an empty value"):
        resolve_config("ppo", "CartPole-v1", config_file=tmp_path / "c.yaml")


def test_null_still_means_none():
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["init_from=null", "ray_address=null", "dataset=null"])
    assert (run.init_from, run.ray_address, run.dataset) == (None, None, None)


def test_the_command_line_says_it_before_writing_anything(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "init_from=", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "'init_from' got an empty value")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("algo, env, item, said", [
    ("acer", "CartPole-v1", "encoder=", "'hparams.encoder' got an empty value (observation encoder: auto (nature CNN"),
    ("sac", "Pendulum-v1", "ent_coef=", "'hparams.ent_coef' got an empty value (entropy coefficient: 'auto'"),
])
def test_an_empty_name_hyperparameter_is_refused_when_resolved(algo, env, item, said):
    """hparams.encoder= was taken, then refused as "unknown encoder ''" when the model was built; ent_coef= said
    "... got ''"."""
    with pytest.raises(CanterError) as info:
        resolve_config(algo, env, sets=[item])
    assert str(info.value).startswith(said)
