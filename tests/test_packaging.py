"""pyproject.toml's extras: what ``pip install 'canter[EXTRA]'`` brings, and the error when one is missing."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from canter.errors import MissingExtraError, require
from support import assert_train_refused

ROOT = Path(__file__).resolve().parent.parent


def _extras() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def _name(requirement: str) -> str:
    """A requirement's distribution name with its extras, lowercased: ``gymnasium[box2d]>=1.1`` -> ``gymnasium[box2d]``."""
    return re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", requirement.strip()).group(0).lower()


def test_no_extra_names_a_pygame_distribution() -> None:
    # pygame and pygame-ce both install the package `pygame`; gymnasium's box2d extra installs pygame-ce from
    # gymnasium 1.3 on, so an extra naming pygame made canter[video,box2d] install both, each overwriting the
    # other's files (and uninstalling either broke `import pygame`). The flavour comes from gymnasium's extras.
    named = {extra: [r for r in reqs if _name(r).split("[")[0] in ("pygame", "pygame-ce")]
             for extra, reqs in _extras().items()}
    assert {extra: reqs for extra, reqs in named.items() if reqs} == {}
    for extra in ("video", "test"):
        assert "gymnasium[classic-control]" in [_name(r) for r in _extras()[extra]]


def test_multiagent_installs_what_the_readmes_pettingzoo_games_import() -> None:
    # pistonball_v6 (butterfly) imports pygame and pymunk, tictactoe_v3 and connect_four_v3 (classic) pygame;
    # the extra was PettingZoo alone, so 'pip install canter[multiagent]' left every README example failing
    names = [_name(r) for r in _extras()["multiagent"]]
    assert "pettingzoo" in names and "gymnasium[classic-control]" in names and "pymunk" in names


def test_a_bare_folder_named_like_the_package_is_a_missing_extra(tmp_path, monkeypatch) -> None:
    # `python -m canter` (or a notebook) puts the working directory on sys.path: its ./wandb, which wandb writes,
    # or /tmp/ray, which Ray does, imported as a namespace package and gave "AttributeError: module 'wandb' has
    # no attribute 'init'" (a traceback, exit 1) where wandb was not installed
    (tmp_path / "canter_no_such_extra_pkg").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError, match=r"--feature needs the 'canter_no_such_extra_pkg' package; install "
                                                r"it with: pip install 'canter\[extra\]'"):
        require("canter_no_such_extra_pkg", "extra", "--feature")
    assert require("json", "extra", "--feature").dumps  # a real module is returned


@pytest.mark.parametrize("module, argv, message", [
    ("minari", ["train", "bc", "--dataset", "minari:cartpole/expert-v0"],
     "a Minari dataset needs the 'minari' package; install it with: pip install 'canter[offline]'"),
    ("pettingzoo", ["train", "ppo", "--env", "pettingzoo:pettingzoo.classic.tictactoe_v3"],
     "a PettingZoo env needs the 'pettingzoo' package; install it with: pip install 'canter[multiagent]'"),
])
def test_a_missing_extra_is_one_line_naming_it(module, argv, message, capsys, monkeypatch, tmp_path) -> None:
    # they read "Minari datasets needs" and "PettingZoo environments needs"
    import sys

    monkeypatch.setitem(sys.modules, module, None)  # import MODULE: ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith(f"{module}.")]:  # as uninstalled: no submodule an earlier
        monkeypatch.delitem(sys.modules, name)  # test imported (pettingzoo.classic.tictactoe_v3) is still there
    assert_train_refused(capsys, tmp_path, argv, message)


def test_a_plain_atari_id_without_ale_py_names_the_atari_extra(monkeypatch) -> None:
    # ale-py registers Breakout-v4, Pong-ram-v0, ...: without it they were only 'unknown env id ...; did you mean
    # 'Ant-v4'?'; ALE/... and ...NoFrameskip-v4 ids already named the extra
    import gymnasium as gym

    from canter.envs import check_env_id
    from canter.errors import CanterError

    monkeypatch.setitem(__import__("sys").modules, "ale_py", None)  # import ale_py: ModuleNotFoundError
    for env_id in ("Breakout-v4", "Pong-ram-v0"):
        monkeypatch.delitem(gym.registry, env_id, raising=False)
        with pytest.raises(CanterError, match=rf"unknown env id '{env_id}'.*; an Atari game's id needs the 'atari' "
                                              r"extra: pip install 'canter\[atari\]'$"):
            check_env_id(env_id)
    with pytest.raises(CanterError) as typo:
        check_env_id("CartPol-v1")
    assert "atari" not in str(typo.value)
