"""``--set KEY=`` with nothing after the ``=``: a number's or a bool's said "must be an int, got ''" while a mapping's
said "got null" (YAML's reading of the empty text). Every typed key now says 'got an empty value' (an optional one's
too: refused, as before); the word null still reads as null, and a list's empty text is the empty list."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("item, said", [
    ("seed=", "'seed' must be an int, got an empty value"),
    ("max_steps=", "'max_steps' must be an int, got an empty value"),
    ("max_seconds= ", "'max_seconds' must be a float or null, got an empty value"),
    ("n_envs=", "'n_envs' must be an int or null, got an empty value"),
    ("tensorboard=", "'tensorboard' must be a bool, got an empty value"),
    ("lr=", "'hparams.lr' must be a float, got an empty value"),
    ("hparams.n_steps=", "'hparams.n_steps' must be an int, got an empty value"),
    ("env_kwargs=", "'env_kwargs' must be a dict, got an empty value"),
    ("hooks=", "'hooks' must be a dict, got an empty value"),
])
def test_an_empty_set_value_is_named_empty(item, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert str(info.value) == said


@pytest.mark.parametrize("item, said", [
    ("seed=null", "'seed' must be an int, got null"),
    ("env_kwargs=~", "'env_kwargs' must be a dict, got null"),
])
def test_the_null_word_is_still_null(item, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert str(info.value) == said


def test_an_empty_list_and_an_optionals_null_are_taken():
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["callbacks=", "max_seconds=null"])
    assert (run.callbacks, run.max_seconds) == ([], None)


def test_the_command_line_says_it_in_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "seed=", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "'seed' must be an int, got an empty value")
    assert not (tmp_path / "run").exists()
