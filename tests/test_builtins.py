"""``canter list`` and ``canter train ALGO --help``: what they print of canter's own and of a user's components."""
from __future__ import annotations

import canter
from canter.algorithms.ppo import PPO
from canter.cli import main
from canter.registry import _REGISTRY


def test_list_shows_a_user_algorithm_without_a_docstring(capsys, monkeypatch):
    """A registered algorithm class without a docstring made 'canter list' fail with an IndexError (its
    description was the first line of an empty docstring)."""
    monkeypatch.setitem(_REGISTRY, "algorithm", dict(_REGISTRY["algorithm"]))  # the registration is undone after

    @canter.register("algorithm", "undocumented_ppo")
    class Undocumented(PPO):
        name = "undocumented_ppo"

    assert main(["list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "undocumented_ppo" in x)
    assert line.split() == ["undocumented_ppo", "on_policy"]
