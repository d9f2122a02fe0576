"""``--env module:NAME`` where NAME is not an id the module registers: a factory the module registers with
``@canter.register('env', ID)`` is pointed at its id, as a class of gymnasium.register's is, and ``module:`` with the id
left out lists the module's ids, as does the module's name alone (``--env module``) where the module is imported
already (a bare name is not imported: tests/test_env_bare_names.py)."""
from __future__ import annotations

import importlib

import pytest

from support import assert_one_line_error, run_cli

_MODULE = ("import gymnasium as gym\nimport canter\n\n\n"
           "@canter.register('env', 'OwnCart-v0')\ndef make_cart(**kw):\n    return gym.make('CartPole-v1', **kw)\n")


@pytest.mark.parametrize("env, expected", [
    # was "register it there, e.g. gymnasium.register('make_cart-v0', entry_point=...)": it was registered already
    ("ids_of_module_envs:make_cart", "'ids_of_module_envs:make_cart' names an object of ids_of_module_envs, not an env "
                                     "id; it is registered as 'OwnCart-v0': pass --env ids_of_module_envs:OwnCart-v0"),
    # was "the module registers no env of that id (gymnasium.register('', entry_point=...) ...)"
    ("ids_of_module_envs:", "env 'ids_of_module_envs:' names no env id after the colon; did you mean "
                            "'ids_of_module_envs:OwnCart-v0'?"),
    # was "unknown env id 'ids_of_module_envs'; 417 choices" (a module imported already: a bare name is not imported,
    # tests/test_env_bare_names.py)
    ("ids_of_module_envs", "env 'ids_of_module_envs' is a module, not an env id; pass one of the ids it registers as "
                           "--env ids_of_module_envs:ID, e.g. --env ids_of_module_envs:OwnCart-v0 (it registers "
                           "OwnCart-v0)"),
], ids=["factory", "empty-id", "module-alone"])
def test_a_module_name_that_is_no_id_points_to_the_modules_ids(capsys, workdir, monkeypatch, env, expected):
    (workdir / "ids_of_module_envs.py").write_text(_MODULE)
    monkeypatch.syspath_prepend(str(workdir))
    if ":" not in env:  # the module alone lists its ids where it is imported already (as by the run's imports)
        importlib.import_module(env)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", env, "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, expected)
    assert not (workdir / "run").exists()


def test_an_unknown_id_that_is_a_standard_library_module_is_not_imported(capsys, workdir, monkeypatch):
    """'--env this' (any unknown id naming a module) was imported to look for the env ids it registers: the Zen of
    Python was printed before the unknown id's line (and '--env antigravity' opened a web browser)."""
    import sys

    monkeypatch.delitem(sys.modules, "this", raising=False)  # imported again, it would print again
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "this", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "unknown env id 'this'")
    assert "Zen of Python" not in out and "this" not in sys.modules
