"""An env id whose module is gymnasium-robotics' (``gymnasium_robotics:FetchReach-v4``, as docs/hindsight.md trains
it) where that package is not installed: the error names the pip package to install, as the missing extras' do
(it was "cannot import module 'gymnasium_robotics' ...: No module named 'gymnasium_robotics'")."""
from __future__ import annotations

import importlib.util

import pytest

from canter import errors
from canter.envs import make_vec_env
from canter.errors import MissingExtraError
from canter.registry import import_user_modules
from support import assert_one_line_error, run_cli

ROBOTICS_MISSING = importlib.util.find_spec("gymnasium_robotics") is None


@pytest.fixture
def fake_package(monkeypatch):
    """An env module of ENV_PACKAGES's that is not installed, whatever this machine has."""
    monkeypatch.setitem(errors.ENV_PACKAGES, "no_such_robotics", "no-such-robotics")


def test_a_missing_env_package_names_its_pip_package(fake_package):
    with pytest.raises(MissingExtraError, match=r"^env 'no_such_robotics.envs:Reach-v0' needs the 'no_such_robotics' "
                                                r"package; install it with: pip install no-such-robotics$"):
        make_vec_env("no_such_robotics.envs:Reach-v0", 1)


def test_a_runs_recorded_module_names_its_pip_package(fake_package):
    with pytest.raises(Exception, match=r"cannot import module 'no_such_robotics'.*; install it with: pip install "
                                        r"no-such-robotics$"):
        import_user_modules(["no_such_robotics"], "run 'r'")


@pytest.mark.skipif(not ROBOTICS_MISSING, reason="gymnasium-robotics is installed here")
def test_fetch_reach_without_gymnasium_robotics_is_one_line_naming_it(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "sac", "--env", "gymnasium_robotics:FetchReach-v4", "--max-steps", "64",
                           "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "env 'gymnasium_robotics:FetchReach-v4' needs the 'gymnasium_robotics' package",
                          "pip install gymnasium-robotics")
    assert not (tmp_path / "run").exists()
    code, _, err = run_cli(capsys, "train", "sac", "--env", "FetchReach-v4", "--max-steps", "64",
                           "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "unknown env id 'FetchReach-v4'",
                          "gymnasium-robotics' env: --env gymnasium_robotics:FetchReach-v4 (pip install gymnasium-robotics)")


def test_a_missing_extra_still_names_canters_extra():
    error = MissingExtraError("--record-every", "video", "moviepy")
    assert str(error) == "--record-every needs the 'moviepy' package; install it with: pip install 'canter[video]'"
    import pickle

    assert str(pickle.loads(pickle.dumps(MissingExtraError("env 'x'", None, "m", "m-pkg")))) == str(
        MissingExtraError("env 'x'", None, "m", "m-pkg"))
