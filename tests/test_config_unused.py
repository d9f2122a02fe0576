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


def test_a_presets_target_reward_that_evaluations_never_check_says_how_to_drop_it():
    """--eval-every 0 on a long CartPole run was refused for a target_reward the user never gave (PPO's preset sets
    475), saying only to set eval_every > 0."""
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=r"'target_reward' \(475, which the env's shipped preset may set\) is only "
                                          r"checked at evaluations; .* or drop it \(--set target_reward=null\)"):
        resolve_config("ppo", "CartPole-v1", sets=["eval_every=0", "max_steps=2e7", "target_reward=475"])  # given
    run, _ = resolve_config("ppo", "CartPole-v1", sets=["eval_every=0", "max_steps=2e7", "target_reward=null"])
    assert run.target_reward is None
