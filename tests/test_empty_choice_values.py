"""A setting with a fixed list of choices given empty (``--set device=``, ``--set hparams.activation=``) said
"unknown value for 'device' ''; choices: ...", where a number's empty ``--set`` says 'got an empty value': it
now says that too, with the choices."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from tests.support import assert_one_line_error, run_cli


@pytest.mark.parametrize("algo, item, said", [
    ("ppo", "device=", "'device' got an empty value; choices: auto, cpu, cuda, cuda:N"),
    ("ppo", "device= ", "'device' got an empty value; choices: auto, cpu, cuda, cuda:N"),
    ("ppo", "vectorization=", "'vectorization' got an empty value; choices: async, auto, native, sync"),
    ("ppo", "policies=", "'policies' got an empty value; choices: agent, joint, shared, type"),
    ("ppo", "monitor=", "'monitor' got an empty value; choices: eval, rolling"),
    ("ppo", "lr_decay=", "'lr_decay' got an empty value; choices: constant, cosine, linear, step"),
    ("ppo", "divergence_guard=", "'divergence_guard' got an empty value; choices: off, restore, stop"),
    ("ppo", "conv_precision=", "'conv_precision' got an empty value; choices: bfloat16, float32"),
    ("ppo", "hparams.activation=", "'hparams.activation' got an empty value; choices: elu, gelu, relu, silu, tanh"),
    ("a2c", "optimizer=", "'hparams.optimizer' got an empty value; choices: adam, rmsprop"),
])
def test_an_empty_choice_is_named_empty(algo, item, said):
    with pytest.raises(CanterError) as info:
        resolve_config(algo, "CartPole-v1", sets=[item])
    assert str(info.value) == said


def test_an_unknown_choice_reads_as_before():
    with pytest.raises(CanterError, match=r"^unknown value for 'monitor' 'evl'; did you mean 'eval'\?$"):
        resolve_config("ppo", "CartPole-v1", sets=["monitor=evl"])


def test_the_device_flag_says_it_in_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--device", "", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, "'device' got an empty value; choices: auto, cpu, cuda, cuda:N")
    assert not (tmp_path / "run").exists()
