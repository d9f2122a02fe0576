"""A flag given an empty value (``--seed ''``, ``--max-steps=``) said argparse's "argument --seed: invalid int
value: ''", where ``--set seed=`` says "'seed' must be an int, got an empty value": every command's flags now say
it as ``--set`` does (a flag of choices names them), in one line with exit code 2; a resume's flags without its
note on the options it takes. Other invalid values read as before."""
import pytest

from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("flag, said", [
    ("--seed", "--seed must be an int, got an empty value"),
    ("--max-steps", "--max-steps must be an int, got an empty value"),
    ("--n-envs", "--n-envs must be an int, got an empty value"),
    # flags that take a number or null (029d04b8) say so, as --explorer-timeout does
    ("--target-reward", "--target-reward got an empty value; give a number, or null for none"),
    ("--max-seconds", "--max-seconds got an empty value; give a number, or null for none"),
    ("--explorer-timeout", "--explorer-timeout got an empty value; give seconds, or null"),
    ("--vectorization", "--vectorization got an empty value; choices: auto, native, sync, async"),
])
@pytest.mark.parametrize("written", ["{flag}=", "{flag}= "])
def test_an_empty_train_flag_is_named_empty(tmp_path, capsys, flag, said, written):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", written.format(flag=flag), "--run-dir",
                           str(tmp_path / "run"))
    line = assert_one_line_error(code, err, said)
    assert line == f"canter: error: {said}"
    assert not (tmp_path / "run").exists()


def test_a_resume_flag_says_it_without_the_options_note(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "run"), "--max-steps", "")
    assert assert_one_line_error(code, err) == "canter: error: --max-steps must be an int, got an empty value"


def test_a_resume_max_seconds_given_empty_says_null_too(tmp_path, capsys):
    """The resume's --max-seconds takes null too (9278ff24): its empty value says so, without the options note."""
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "run"), "--max-seconds", "")
    assert assert_one_line_error(code, err) == ("canter: error: --max-seconds got an empty value; give a number, "
                                                "or null for none")


def test_a_tools_flag_says_it_too(tmp_path, capsys):
    code, _, err = run_cli(capsys, "collect", str(tmp_path / "run"), "--epsilon", "", "--out", str(tmp_path / "d"))
    assert assert_one_line_error(code, err) == "canter: error: --epsilon must be a float, got an empty value"


def test_other_invalid_values_read_as_before(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--seed", "x", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "argument --seed: invalid int value: 'x'")
