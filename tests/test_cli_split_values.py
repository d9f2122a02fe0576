"""A flag's value with spaces, given unquoted: the shell splits it, and the error says to quote it."""
import pytest

from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("argv, quoted", [
    (["--set", "net_arch=[64,", "64]"], "--set 'net_arch=[64, 64]'"),
    (["--set", "env_kwargs={max_episode_steps:", "5,", "sutton_barto_reward:", "true}"],
     "--set 'env_kwargs={max_episode_steps: 5, sutton_barto_reward: true}'"),
    (["--net-arch", "[64,", "64]"], "--net-arch '[64, 64]'"),
    (["--env-kwargs", "{max_episode_steps:", "5}"], "--env-kwargs '{max_episode_steps: 5}'"),
])
def test_a_value_the_shell_split_at_its_spaces_is_named_quoted(capsys, tmp_path, argv, quoted):
    """--set net_arch=[64, 64] unquoted was 'unrecognized arguments: 64]' alone: the rest of the value, which the
    shell had split off, named as arguments of their own, without a word about the quotes it needed."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *argv, "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "unrecognized arguments:", f"the shell split a value at its spaces: quote it, "
                                                                 f"{quoted}")
    assert not (tmp_path / "run").exists()


def test_other_unrecognized_arguments_get_no_quoting_hint(capsys, tmp_path):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--net-arch", "64", "64", "--quiet")
    line = assert_one_line_error(code, err, "unrecognized arguments: 64")
    assert "quote" not in line
