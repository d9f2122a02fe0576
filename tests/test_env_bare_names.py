"""``--env NAME`` without ``module:``: only ``module:ID`` imports a module. A bare unknown id that a module of the
current directory happened to be named by was imported to look for the ids it registers (``--env train`` ran the
user's train.py, and the unknown id's line came after whatever it did); now it is the unknown id's line with its
closest ids, and a note that ``NAME:ID`` is how an env of that module is given."""
from __future__ import annotations

import sys

from support import assert_one_line_error, run_cli

_SCRIPT = "print('train.py ran')\nopen('ran.txt', 'w').close()\n"
_MODULE = ("import gymnasium as gym\nimport canter\n\n\n"
           "@canter.register('env', 'ImportedCart-v0')\ndef make_cart(**kw):\n    return gym.make('CartPole-v1', **kw)\n")


def test_a_bare_name_of_a_script_in_the_current_directory_is_not_imported(capsys, workdir, monkeypatch):
    (workdir / "train_cartpol.py").write_text(_SCRIPT)
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.chdir(workdir)
    monkeypatch.delitem(sys.modules, "train_cartpol", raising=False)
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "train_cartpol", "--run-dir", str(workdir / "run"))
    # (the closest ids: envs other tests of the process registered may come first, 'BrokenCartPole-v0')
    assert_one_line_error(code, err, "unknown env id 'train_cartpol'; did you mean ", "'CartPole-v1'",
                          "'train_cartpol' is also a module, which a bare env id does not import: an env it "
                          "registers is --env train_cartpol:ID")
    assert "train.py ran" not in out and not (workdir / "ran.txt").exists() and "train_cartpol" not in sys.modules
    assert not (workdir / "run").exists()


def test_a_dotted_bare_name_imports_neither_the_package_nor_its_module(capsys, workdir, monkeypatch):
    (workdir / "own_pkg").mkdir()
    (workdir / "own_pkg" / "__init__.py").write_text(_SCRIPT)
    (workdir / "own_pkg" / "envs.py").write_text(_MODULE.replace("ImportedCart", "BareCart"))
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.chdir(workdir)
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "own_pkg.envs", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "unknown env id 'own_pkg.envs'", "--env own_pkg.envs:ID")
    assert "own_pkg" not in sys.modules and not (workdir / "ran.txt").exists()
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "own_pkg.nope", "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "unknown env id 'own_pkg.nope'")
    assert "also a module" not in line and "own_pkg" not in sys.modules


def test_a_module_imported_already_still_lists_its_ids(capsys, workdir, monkeypatch):
    """The module alone, imported by the run's imports, is not a typo: its ids are listed, as README says."""
    (workdir / "ids_of_imported_envs.py").write_text(_MODULE)
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "ids_of_imported_envs", "--set",
                           "imports=[ids_of_imported_envs]", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "env 'ids_of_imported_envs' is a module, not an env id; pass one of the ids it "
                                     "registers as --env ids_of_imported_envs:ID, e.g. --env "
                                     "ids_of_imported_envs:ImportedCart-v0")


def test_a_bare_name_of_a_plain_folder_is_not_called_a_module(capsys, workdir, monkeypatch):
    """A folder without ``__init__.py`` (a run directory or dataset named for its env) is a namespace package to
    find_spec, which registers no env: the line said 'cartpole' is also a module whose envs are --env cartpole:ID."""
    (workdir / "cartpol").mkdir()
    (workdir / "cartpol" / "checkpoints").mkdir()
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.chdir(workdir)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "cartpol", "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "unknown env id 'cartpol'; did you mean ", "'CartPole-v1'")
    assert "also a module" not in line
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "cartpol.checkpoints", "--run-dir", str(workdir / "run"))
    assert "also a module" not in assert_one_line_error(code, err, "unknown env id 'cartpol.checkpoints'")
