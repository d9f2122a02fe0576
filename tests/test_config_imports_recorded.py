"""A run config's imports as the run records them: what a later process imports again."""
import re
import textwrap

import pytest

from canter.config import resolve_config, resolved_dict
from canter.registry import import_user_modules, user_modules


def test_an_imports_entry_with_spaces_is_recorded_as_imported(tmp_path, monkeypatch):
    """imports: [' my_parts '] was imported stripped when training but recorded with its spaces, in config.yaml and
    the checkpoints' user_modules: 'canter eval' (canter.load) of the run then failed, "cannot import module
    ' my_parts '"."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "spaced_parts.py").write_text(textwrap.dedent("""
        from canter import register
        from canter.models import ActorCritic

        @register("model", "spaced_ac")
        class SpacedAC(ActorCritic):
            pass
    """))
    f = tmp_path / "run.yaml"
    f.write_text("imports: [' spaced_parts ']\nmodel: spaced_ac\n")
    config = resolved_dict(*resolve_config("ppo", "CartPole-v1", f))
    assert config["imports"] == ["spaced_parts"]
    assert user_modules(config) == ["spaced_parts"]
    import_user_modules(user_modules(config), "checkpoint x", config)  # as canter.load does


def test_a_policys_own_algorithm_and_encoder_are_recorded_by_their_modules(tmp_path, monkeypatch):
    """policy_hparams: {listener: {algo: my_ppo}} (a user's algorithm registered by a module the training script
    imported) was not recorded among the checkpoint's user_modules, as the run's own algo is: 'canter eval' of the run
    in a fresh process said "'policy_hparams.listener.algo': unknown algorithm 'my_ppo'". Its encoder likewise."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "policy_parts.py").write_text(textwrap.dedent("""
        from canter import register
        from canter.algorithms.ppo import PPO
        from canter.models.cnn import FlatEncoder

        @register("algorithm", "policy_parts_ppo")
        class PolicyPPO(PPO):
            pass

        @register("encoder", "policy_parts_flat")
        class PolicyFlat(FlatEncoder):
            pass
    """))
    import sys

    from canter.registry import _REGISTERED_BY, _REGISTRY

    try:
        import policy_parts  # noqa: F401 - as a training script imports it

        config = {"algo": "ppo", "env": "CartPole-v1", "hparams": {},
                  "policy_hparams": {"listener": {"algo": "policy_parts_ppo"},
                                     "speaker": {"encoder": "policy_parts_flat"}, "other": {"algo": "random"}}}
        assert user_modules(config) == ["policy_parts"]
    finally:  # registered for this test only: later tests list the algorithms (canter list, error hints)
        for kind, name in (("algorithm", "policy_parts_ppo"), ("encoder", "policy_parts_flat")):
            _REGISTRY[kind].pop(name, None)
            _REGISTERED_BY.pop((kind, name), None)
        sys.modules.pop("policy_parts", None)


@pytest.mark.parametrize("given, dotted", [("my_parts.py", "my_parts"), ("pkg/my_parts.py", "pkg.my_parts"),
                                           ("./pkg/my_parts", "pkg.my_parts")])
def test_an_import_given_as_a_files_path_names_the_module(given, dotted):
    """imports: [my_parts.py] was Python's "No module named 'my_parts.py'; 'my_parts' is not a package" alone, and
    ./pkg/my_parts "the 'package' argument is required to perform a relative import"; each now names the module."""
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=rf"cannot import module '{re.escape(given)}' \(imports\): .*a module is named "
                                          rf"as Python imports it, '{dotted}' \(with its folder on PYTHONPATH\)"):
        resolve_config("ppo", "CartPole-v1", sets=[f"imports=[{given}]"])


def test_imports_given_as_a_python_tuple_are_a_list_as_every_list_settings_are(tmp_path, monkeypatch):
    """make_trainer(imports=("my_pkg.parts",)) was refused ("'imports' must be a list of module names"), though every
    other list setting takes a tuple (net_arch=(64, 64)), as the README says."""
    import canter

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tuple_parts.py").write_text(textwrap.dedent("""
        from canter import register
        from canter.models import ActorCritic

        @register("model", "tuple_ac")
        class TupleAC(ActorCritic):
            pass
    """))
    trainer = canter.make_trainer("ppo", "CartPole-v1", imports=("tuple_parts",), model="tuple_ac", max_steps=512)
    trainer.close()
    assert trainer.run.imports == ["tuple_parts"] and type(trainer.agent.algorithm.model).__name__ == "TupleAC"
