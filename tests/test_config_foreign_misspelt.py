"""A near misspelling of another library's name for a setting gets the answer the name itself gets."""

from __future__ import annotations

import pytest

from support import assert_train_refused


@pytest.mark.parametrize("key,needle", [
    ("hparams.learnin_rate", "unknown config key 'hparams.learnin_rate'; canter calls it 'hparams.lr' "
                             "(Stable-Baselines3's 'learning_rate')"),  # was: did you mean 'hparams.clip_range'
    ("learnin_rate", "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')"),
    ("total_timestep", "canter calls it 'max_steps' (Stable-Baselines3's 'total_timesteps')"),
    ("discount_factr", "canter calls it 'hparams.gamma' (Tianshou's 'discount_factor')"),
    ("hparams.n_epoch", "did you mean 'hparams.n_epochs'"),  # closer to canter's own key: that one is offered
    ("clip_rang", "did you mean 'clip_range'"),
])
def test_a_misspelt_foreign_name_is_answered_as_the_name(key, needle, capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "CartPole-v1", "--set", f"{key}=0.1"], needle)
