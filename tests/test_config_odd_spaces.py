"""A Unicode space (a no-break space pasted from a web page or a document) outside quotes in a config file or a
--set value is named, with its line: YAML reads it as part of the text, not as a space."""
from __future__ import annotations

import pytest
import yaml

from canter.config import resolve_config
from canter.yaml_io import safe_load
from support import assert_train_refused

NBSP = "\u00a0"


@pytest.mark.parametrize("text,where", [
    (f"seed: 1\nn_envs:{NBSP}2\n", "line 2, column 8"),  # was "line 3, column 1: could not find expected ':'"
    (f"hparams:\n{NBSP}{NBSP}lr: 0.1\n", "line 2, column 1"),  # was "unknown config key '  lr'...; write 'lr'"
    (f"seed{NBSP}: 1\n", "line 1, column 5"),
    (f"env_kwargs: [1,{NBSP}2]\n", "line 1, column 16"),
])
def test_a_no_break_space_in_a_config_file_is_named(capsys, tmp_path, text, where):
    """Each of these was refused naming something else (a missing ':', a top-level key '  lr' to be written 'lr'),
    or read into a value without a word."""
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "CartPole-v1", "-f", str(path)],
                         f"malformed YAML in {path} {where}: a no-break space (U+00A0), which YAML reads as part of "
                         f"the text, not as a space: retype it as a space (or quote the text)")


def test_a_no_break_space_in_a_set_mapping_is_named():
    """--set env_kwargs={max_episode_steps:<no-break space>100} was {'max_episode_steps:\\xa0100': None}."""
    with pytest.raises(Exception, match=r"'env_kwargs': cannot parse .* as YAML: a no-break space \(U\+00A0\)"):
        resolve_config("ppo", "CartPole-v1", sets=[f"env_kwargs={{max_episode_steps:{NBSP}100}}"])


def test_quoted_text_comments_and_block_text_keep_their_spaces():
    """Inside quotes, a comment or a block scalar the space is text, as it was."""
    text = f"a: 'x{NBSP}y'\nb: \"x{NBSP}y\"  # c{NBSP}d\n# e{NBSP}f\nc: |\n  x{NBSP}y\n"
    assert safe_load(text) == {"a": f"x{NBSP}y", "b": f"x{NBSP}y", "c": f"x{NBSP}y\n"}


@pytest.mark.parametrize("text,problem", [
    (f"seed: 1\nname: 'a{NBSP}b': c\n", "mapping values are not allowed here"),
    (f'a: 1\n  b: "x{NBSP}y"\n', "mapping values are not allowed here"),
])
def test_a_yaml_error_on_a_line_with_quoted_text_holding_one_is_the_yaml_error(text, problem):
    """A YAML error on a line whose quoted text holds a no-break space was reported as that space ('retype it as a
    space (or quote the text)', of text quoted already), in place of the error itself."""
    with pytest.raises(yaml.YAMLError) as info:
        safe_load(text)
    assert problem in str(info.value) and "no-break space" not in str(info.value)


def test_a_key_holding_one_beside_quoted_text_is_still_named():
    with pytest.raises(yaml.YAMLError, match=r"a no-break space \(U\+00A0\)[^\n]*\n +in \"<text>\", line 2, column 18"):
        safe_load(f"seed: 1\nx: 'it{NBSP}s' n_envs:{NBSP}2\ny: 1\n")
