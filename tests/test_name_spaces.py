"""A space before or after an env id or a registered name is named as such, in one line."""

from __future__ import annotations

import pytest

from canter.errors import unknown
from support import assert_train_refused


@pytest.mark.parametrize("argv,needle", [
    (["train", "ppo", "--env", " CartPole-v1"], "env id ' CartPole-v1' has a space before or after it; write "
                                                 "'CartPole-v1'"),
    (["train", "dqn", "--env", "CartPole-v1 "], "write 'CartPole-v1'"),
    (["train", "ppo ", "--env", "CartPole-v1"], "unknown algorithm 'ppo ': it has a space before or after it"),
])
def test_a_name_with_a_space_is_refused_naming_the_space(argv, needle, capsys, tmp_path):
    """' CartPole-v1' was 'unknown env id' (its preset unapplied), the quotes the only sign of the space."""
    assert_train_refused(capsys, tmp_path, argv, needle)


def test_unknown_names_the_space_only_when_stripping_finds_the_name():
    assert "space" in str(unknown("model", "mlp_q ", ["mlp_q", "mlp_qr"]))
    assert "did you mean 'mlp_q'" in str(unknown("model", "mlp_qq", ["mlp_q", "mlp_qr"]))
