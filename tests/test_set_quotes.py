"""A quoted --set value reads as YAML reads it, at the top level as in a nested value."""

from __future__ import annotations

import pytest

from canter.config import parse_set, resolve_config
from canter.errors import CanterError
from support import assert_train_refused


@pytest.mark.parametrize("item,value", [
    ("model='mlp_q'", "mlp_q"),
    ('model="mlp_q"', "mlp_q"),
    ("run_name='it''s'", "it's"),  # YAML's quoting, as a file's
    ("model='a'b'", "'a'b'"),  # not one quoted string: kept as typed
    ("model=mlp_q", "mlp_q"),
    ("net_arch=[64, 64]", "[64, 64]"),
])
def test_parse_set_unquotes_a_quoted_string(item, value):
    """--set "model='x'" kept its quotes (the model name was 'x' with them) while env_kwargs={a: 'x'} lost them."""
    assert parse_set(item)[1] == value


def test_a_quoted_model_name_resolves():
    run, _ = resolve_config("dqn", "CartPole-v1", sets=["model='mlp_q'", "env_kwargs={max_episode_steps: '50'}"])
    assert run.model == "mlp_q"


def test_a_quoted_name_with_a_space_is_named_as_such(capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "dqn", "--env", "CartPole-v1", "--set", "model=' mlp_q'"],
                         "unknown model ' mlp_q': it has a space before or after it; write 'mlp_q'")


@pytest.mark.parametrize("item,value", [
    ("env_kwargs.version='1.0'", "1.0"),
    ('env_kwargs.version="5"', "5"),
    ("env_kwargs.version='null'", "null"),
    ("env_kwargs.version='yes'", "yes"),
    ("eval_env_kwargs.version='a: b'", "a: b"),
    ("env_kwargs.version=1.0", 1.0),  # unquoted: read as YAML, as before
    ("env_kwargs.version=null", None),
])
def test_a_quoted_entry_of_a_mapping_setting_is_text(item, value):
    """--set "env_kwargs.version='1.0'" gave the env the float 1.0 (and 'null' None, 'yes' True): parse_set took the
    quotes off, then the entry was read as YAML a second time. A whole mapping's quoted entry,
    env_kwargs={version: '1.0'}, was the string already."""
    run, _ = resolve_config("ppo", "CartPole-v1", sets=[item])
    kwargs = run.eval_env_kwargs if item.startswith("eval_") else run.env_kwargs
    assert kwargs == {"version": value} and type(kwargs["version"]) is type(value)


@pytest.mark.parametrize("item", ["model=", "model=''", "agent="])
def test_an_empty_model_or_agent_name_is_refused(item):
    """--set model= (or a file's model: '') trained the algorithm's default model and recorded model: '' without a
    word, where model=' ' and encoder= are refused as unknown names."""
    key = item.split("=")[0]
    with pytest.raises(CanterError, match=f"^'{key}' is empty: give a registered {key} name or module:Class "
                                          r"\(null: the default\)$"):
        resolve_config("ppo", "CartPole-v1", sets=[item])
