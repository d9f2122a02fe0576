"""Run settings that act only with another one are warned about when a run gives them without it."""
import warnings

import pytest

import canter
from canter.config import resolve_config
from canter.config_unused import unused_settings

TINY = dict(n_envs=2, n_steps=32, batch_size=64, max_steps=64, eval_episodes=0)


@pytest.mark.parametrize("given, needle", [
    ({"plateau_factor": 0.2}, "plateau_factor 0.2 acts only with plateau_patience"),
    ({"min_delta": 1.0}, "min_delta 1.0 acts only with early_stopping or plateau_patience"),
    ({"monitor": "rolling"}, "monitor rolling acts only with early_stopping or plateau_patience"),
    ({"lr_decay_final": 0.1}, "lr_decay_final 0.1 acts only with lr_decay: linear or cosine"),
    ({"lr_decay": "linear", "lr_decay_every": 10}, "lr_decay_every 10 acts only with lr_decay: step"),
    ({"divergence_lr_factor": 0.1}, "divergence_lr_factor 0.1 acts only with divergence_guard: restore"),
])
def test_a_setting_without_the_one_it_acts_with_is_warned_about(given, needle):
    """plateau_factor without plateau_patience, lr_decay_final with the constant lr_decay, ... were taken without a
    word and never acted."""
    with pytest.warns(canter.CanterWarning, match=needle):
        canter.make_trainer("ppo", "CartPole-v1", **TINY, **given).close()


def test_settings_that_act_or_keep_their_defaults_are_not_warned_about():
    """Defaults (a run's config.yaml holds every key) and settings with what they act with say nothing."""
    assert unused_settings(resolve_config("ppo", "CartPole-v1")[0]) == []
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["plateau_patience=2", "plateau_factor=0.2", "min_delta=1",
                                                        "lr_decay=cosine", "lr_decay_final=0.1", "monitor=rolling",
                                                        "divergence_guard=restore", "divergence_max_restores=5"])
    assert unused_settings(run) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        canter.make_trainer("ppo", "CartPole-v1", **TINY, lr_decay="step", lr_decay_every=10).close()
