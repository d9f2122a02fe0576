"""``canter list`` and ``canter train ALGO --help``: what they print of canter's own and of a user's components."""
from __future__ import annotations

import pytest

import canter
from canter import registry
from canter.algorithms.ppo import PPO
from canter.builtins import MANIFEST, algorithm_info, dumps, generate, manifest
from canter.cli import _train_parser, main
from canter.errors import CanterError
from canter.registry import _REGISTRY, lookup
from support import assert_one_line_error, run_cli


def test_list_shows_a_user_algorithm_without_a_docstring(capsys, monkeypatch):
    """A registered algorithm class without a docstring made 'canter list' fail with an IndexError (its
    description was the first line of an empty docstring)."""
    monkeypatch.setitem(_REGISTRY, "algorithm", dict(_REGISTRY["algorithm"]))  # the registration is undone after

    @canter.register("algorithm", "undocumented_ppo")
    class Undocumented(PPO):
        name = "undocumented_ppo"

    assert main(["list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "undocumented_ppo" in x)
    # its summary names the class and the algorithm it extends (it was left empty)
    assert line.split() == ["undocumented_ppo", "on_policy", "Undocumented", "(no", "docstring;", "extends", "PPO)"]


def _canter_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as a fresh process has it (canter's components; what other tests registered is set aside
    until the test ends), canter's components loaded."""
    lookup("algorithm", "ppo")
    for kind, entries in _REGISTRY.items():
        monkeypatch.setitem(_REGISTRY, kind, {k: v for k, v in entries.items() if v.__module__.startswith("canter.")})


def _no_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh process, canter's components not loaded: builtins.json answers (and nothing is looked up)."""
    monkeypatch.setattr(registry, "_BUILTINS_LOADED", False)
    monkeypatch.setattr(registry, "lookup", None)


def test_builtins_json_is_what_the_registry_gives():
    """canter/builtins.json answers 'canter list' and 'train ALGO --help' without importing canter's components:
    it must say what they register (their names, and each algorithm's family, summary and hyperparameters)."""
    assert MANIFEST.read_text(encoding="utf-8") == dumps(generate()), (
        "canter/builtins.json is out of date: write it again with 'python -m canter.builtins'")


@pytest.mark.parametrize("algo", sorted(manifest()["algorithms"]) + ["PPO", "Dqn"])
def test_train_help_from_builtins_json_is_the_help_the_classes_give(algo, monkeypatch):
    """'canter train ALGO --help' from builtins.json (no torch) is the text it was when the registry's classes
    gave it (after importing everything)."""
    _canter_only(monkeypatch)
    from_classes = _train_parser("canter train", algo, strict=True).format_help()
    _no_lookups(monkeypatch)
    assert _train_parser("canter train", algo, strict=True).format_help() == from_classes


def test_list_from_builtins_json_is_the_list_the_classes_give(capsys, monkeypatch):
    """'canter list' from builtins.json (no torch) prints what it printed from the registry's classes."""
    _canter_only(monkeypatch)
    assert main(["list"]) == 0
    from_classes = capsys.readouterr().out
    _no_lookups(monkeypatch)
    assert main(["list"]) == 0
    assert capsys.readouterr().out == from_classes


def test_unknown_algorithm_from_builtins_json_suggests_close_names(monkeypatch):
    """An unknown name is lookup's error, with the close names, without importing the algorithms."""
    _canter_only(monkeypatch)
    _no_lookups(monkeypatch)
    with pytest.raises(CanterError, match=r"unknown algorithm 'ppoo'; did you mean 'ppo' or 'appo' or 'mappo'\?"):
        algorithm_info("ppoo")


def test_list_shows_docstring_summaries_as_plain_text(capsys, monkeypatch):
    """QMIX's line read 'QMIX with feed-forward agents on a :class:`~canter.envs.multiagent_views.JointParallelEnv`.':
    the docstring's reST markup went to the terminal as it was."""
    monkeypatch.setitem(_REGISTRY, "algorithm", dict(_REGISTRY["algorithm"]))

    @canter.register("algorithm", "marked_up_ppo")
    class MarkedUp(PPO):
        """PPO on a :class:`~canter.envs.VecEnv` via :meth:`canter.agents.Agent.sample` with ``n_steps``."""

        name = "marked_up_ppo"

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "PPO on a VecEnv via canter.agents.Agent.sample with n_steps." in out
    assert "QMIX with feed-forward agents on a JointParallelEnv." in out
    assert ":class:" not in out and "``" not in out


@pytest.mark.parametrize("algo", sorted(manifest()["algorithms"]))
def test_help_does_not_offer_a_setting_the_algorithm_always_refuses(algo):
    """recurrent_ppo's --help described --normalize-value as MAPPO's ValueNorm and --shared-trunk as sharing the
    hidden layers, c51's --n-quantiles as a QR-DQN head and --huber false as a squared error, all of which those
    algorithms refuse whatever else is set: a flag whose other value is refused must say so in its help."""
    from canter.config import build, describe

    config_cls = lookup("algorithm", algo).Config
    for name, tname, default, doc in describe(config_cls):
        other = (not default) if tname == "bool" else (1 if tname == "int" and default == 0 else None)
        if other is None:
            continue
        try:
            build(config_cls, {name: other}, "hparams")
        except CanterError:
            assert "not" in doc, f"{algo} --{name.replace('_', '-')}: '{doc}'"


USER_PARTS = """import torch.nn as nn
import canter
from canter.algorithms.ppo import PPO

@canter.register("algorithm", "listed_user_ppo")
class ListedPPO(PPO):
    \"\"\"PPO of a user's module.\"\"\"
    name = "listed_user_ppo"

@canter.register("model", "listed_user_net")
class ListedNet(nn.Module):
    pass
"""


@pytest.mark.parametrize("how", ["--import", "-f"])
def test_list_shows_the_components_of_a_users_module_marked(how, capsys, monkeypatch, tmp_path):
    """'canter list' showed canter's components only: those that a module in a config's 'imports' registers
    could not be listed (--import and -f were refused). They are listed now, each marked with its module."""
    for kind in ("algorithm", "model"):  # the registrations are undone after
        monkeypatch.setitem(_REGISTRY, kind, dict(_REGISTRY[kind]))
    (tmp_path / "listed_user_parts.py").write_text(USER_PARTS)
    (tmp_path / "run.yaml").write_text("imports: [listed_user_parts]\nenv: CartPole-v1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "listed_user_parts", raising=False)
    code, out, err = run_cli(capsys, "list", *(["--import", "listed_user_parts"] if how == "--import"
                                               else ["-f", str(tmp_path / "run.yaml")]))
    assert code == 0, err
    line = next(x for x in out.splitlines() if "listed_user_ppo" in x)
    assert line.split() == ["listed_user_ppo", "on_policy", "PPO", "of", "a", "user's", "module.", "[user:",
                            "listed_user_parts]"]
    models = next(x for x in out.splitlines() if x.startswith("models: "))
    assert "listed_user_net [user: listed_user_parts]" in models and "mlp_q," in models  # canter's: unmarked
    assert "  ppo " in out and "[user: canter" not in out


def test_list_of_a_module_that_cannot_be_imported_is_one_line(capsys):
    code, out, err = run_cli(capsys, "list", "--import", "no_such_module_here")
    assert_one_line_error(code, err, "cannot import module 'no_such_module_here'")
    assert not out
    assert_one_line_error(*run_cli(capsys, "list", "--import", " ")[::2], "--import needs a module name")
