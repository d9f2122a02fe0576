"""A None that Python's arguments gave and a setting refuses is named None: seed=None was "'seed' must be an int, got
null", YAML's word for a value the user wrote in Python. A config file's (or --set's) null is still named null."""
import pytest

import canter
from canter.errors import CanterError


@pytest.mark.parametrize("kwargs, message", [
    ({"seed": None}, "'seed' must be an int, got None"),
    ({"lr": None}, "'hparams.lr' must be a float, got None"),
    ({"hparams": {"lr": None}}, "'hparams.lr' must be a float, got None"),
    ({"net_arch": [64, None]}, "'hparams.net_arch' must be an int, got None"),
    ({"env_kwargs": None}, "'env_kwargs' must be a dict, got None"),
])
def test_a_python_none_is_named_none(kwargs, message):
    with pytest.raises(CanterError) as info:
        canter.make_trainer("ppo", "CartPole-v1", **kwargs)
    assert str(info.value) == message


def test_a_config_files_null_is_still_named_null(tmp_path):
    (tmp_path / "run.yaml").write_text("seed: null\nhparams: {lr: null}\n")
    with pytest.raises(CanterError) as info:
        canter.make_trainer("ppo", "CartPole-v1", config_file=tmp_path / "run.yaml")
    assert str(info.value) == "'seed' must be an int, got null"
    (tmp_path / "run.yaml").write_text("hparams: {lr: null}\n")  # beside Python's arguments: the file's null
    with pytest.raises(CanterError) as info:
        canter.make_trainer("ppo", "CartPole-v1", config_file=tmp_path / "run.yaml", seed=1, n_epochs=2)
    assert str(info.value) == "'hparams.lr' must be a float, got null"


def test_a_resume_setting_given_none_in_python_is_named_none(tmp_path):
    canter.train("ppo", "CartPole-v1", max_steps=32, n_envs=1, n_steps=32, batch_size=32, n_epochs=1, eval_every=0,
                 run_dir=tmp_path / "run")
    with pytest.raises(CanterError, match="'checkpoint_every' must be an int, got None$"):
        canter.resume(tmp_path / "run", checkpoint_every=None)


@pytest.mark.parametrize("argv", [["--net-arch", "[64, null]"], ["--net-arch", "64,null"]])
def test_a_command_lines_null_is_still_named_null(argv, capsys):
    """canter train passes its flags through make_trainer's keyword arguments: a flag's null (the user's text) was
    named None, Python's word, since make_trainer named every keyword's None so."""
    from support import run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *argv, "--max-steps", "10")
    assert (code, err.strip()) == (2, "canter: error: 'hparams.net_arch' must be an int, got null")


@pytest.mark.parametrize("item, message", [
    ("seed=null", "'seed' must be an int, got null"),
    ("hparams.lr=null", "'hparams.lr' must be a float, got null"),
    ("lr=~", "'hparams.lr' must be a float, got null"),
    ("normalize_obs=None", "'hparams.normalize_obs' must be a bool, got null"),
])
def test_a_set_null_of_a_number_or_bool_is_a_files_null(item, message):
    """--set seed=null said "got 'null'" (the word, quoted) where a file's 'seed: null' says "got null": coerce read
    the null words as null only for a setting that may be null or holds a list or mapping."""
    with pytest.raises(CanterError) as info:
        canter.make_trainer("ppo", "CartPole-v1", sets=[item])
    assert str(info.value) == message
