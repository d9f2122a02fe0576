"""A run config's imports as the run records them: what a later process imports again."""
import textwrap

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
