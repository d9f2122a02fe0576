"""A multi-policy checkpoint whose policy trained with a user's algorithm and a hyperparameter of its own in
``policy_hparams``, loaded after that hyperparameter was renamed: one line saying the checkpoint was trained with it, as
for ``hparams`` (config.build_saved_hparams), not an unknown key of the command's with another algorithm's names."""
from __future__ import annotations

import dataclasses
import sys

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.errors import CanterError  # noqa: E402

ENV = "pettingzoo:tests.mixed_agents_warns"


@pytest.fixture
def user_parts():
    """tests/user_ext_parts.py's names, registered for this test only (later tests list the registry)."""
    from canter.registry import _REGISTERED_BY, _REGISTRY

    import user_ext_parts

    yield user_ext_parts
    for kind, name in (("model", "user_ext_ac"), ("algorithm", "user_ext_ppo_l2"), ("algorithm", "user_ext_ppo_counted")):
        _REGISTRY[kind].pop(name, None)
        _REGISTERED_BY.pop((kind, name), None)
    sys.modules.pop("user_ext_parts", None)


def _renamed(config: type, old: str, new: str) -> type:
    """``config`` with its field ``old`` called ``new``."""
    fields = []
    for f in dataclasses.fields(config):
        kw = {"default": f.default} if f.default is not dataclasses.MISSING else {"default_factory": f.default_factory}
        fields.append((new if f.name == old else f.name, f.type, dataclasses.field(metadata=f.metadata, **kw)))
    out = dataclasses.make_dataclass(config.__name__, fields)
    out.__module__ = config.__module__
    return out


def test_a_policys_own_hyperparameter_its_algorithm_renamed_is_named_as_the_checkpoints(tmp_path, monkeypatch,
                                                                                        user_parts):
    """It was "unknown config key 'policy_hparams.speaker_0.l2_coef'; did you mean 'policy_hparams.speaker_0.q_coef'?
    user_ext_ppo_l2 has no hyperparameter 'q_coef', acer has one"."""
    trainer = canter.make_trainer("ppo", ENV, imports=["user_ext_parts"], policies="agent", n_envs=1, n_steps=16,
                                  batch_size=16, eval_episodes=0, tensorboard=False, run_dir=tmp_path / "run",
                                  sets=["policy_hparams={speaker_0: {algo: user_ext_ppo_l2, l2_coef: 0.01}}"])
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    monkeypatch.setattr(user_parts.L2PPO, "Config", _renamed(user_parts.L2PPOConfig, "l2_coef", "l2_weight"))
    with pytest.raises(CanterError, match=r"^checkpoint .*agent was trained with hyperparameter "
                                          r"'policy_hparams\.speaker_0\.l2_coef', which the algorithm's config "
                                          r"user_ext_parts:L2PPOConfig no longer has \(renamed .*'l2_weight'\?\)"):
        canter.load(tmp_path / "agent")
