"""The modules of a package, which a mistyped module of the user's (``my_pkg.componets``) and a mistyped PettingZoo
game (``pettingzoo.classic.chess_v5``) are both answered from (:func:`canter.registry.submodules`)."""
from __future__ import annotations

from canter.envs.multiagent_ids import _game_hint
from canter.registry import _closest_module, submodules


def test_submodules_lists_a_package_and_nothing_else(tmp_path, monkeypatch):
    pkg = tmp_path / "hint_modules_pkg"
    pkg.mkdir()
    for name in ("__init__", "components", "envs_v2"):
        (pkg / f"{name}.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert submodules("hint_modules_pkg") == ["components", "envs_v2"]
    assert submodules("hint_modules_pkg.components") == []  # a module, no package
    assert submodules("no_such_hint_package") == []
    # the two hints read the same listing, each with its own matching
    assert _closest_module("hint_modules_pkg.componets") == "; did you mean 'hint_modules_pkg.components'?"
    assert _game_hint(["hint_modules_pkg", "envs_v1"]) == "; did you mean hint_modules_pkg.envs_v2"
    assert _game_hint(["no_such_hint_package", "envs_v1"]) == ""
