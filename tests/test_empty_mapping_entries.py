"""An entry of a mapping setting given empty with ``--set`` (``--set env_kwargs.max_episode_steps=``) was read as
YAML's null and passed None to the env, where the whole mapping given empty (``--set env_kwargs=``) is refused:
it is refused too, 'got an empty value'; the word null still passes None, and a file's entry left empty is YAML's
null as before."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("item, said", [
    ("env_kwargs.max_episode_steps=", "'env_kwargs.max_episode_steps' got an empty value; give a value (null passes "
                                      "None: --set env_kwargs.max_episode_steps=null)"),
    ("eval_env_kwargs.max_episode_steps= ", "'eval_env_kwargs.max_episode_steps' got an empty value; give a value "
                                            "(null passes None: --set eval_env_kwargs.max_episode_steps=null)"),
    ("hooks.after_update=", "'hooks.after_update' got an empty value; give a value"),
])
def test_an_empty_entry_is_refused(item, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert str(info.value) == said


def test_null_and_a_files_empty_entry_still_pass_none(tmp_path):
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["env_kwargs.max_episode_steps=null"])
    assert run.env_kwargs == {"max_episode_steps": None}
    (tmp_path / "c.yaml").write_text("env_kwargs.max_episode_steps:\n")
    run, _ = resolve_config("ppo", "CartPole-v1", config_file=tmp_path / "c.yaml")
    assert run.env_kwargs == {"max_episode_steps": None}


def test_the_command_line_says_it_in_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "env_kwargs.max_episode_steps=",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "'env_kwargs.max_episode_steps' got an empty value")
    assert not (tmp_path / "run").exists()
