"""A Stable-Baselines3 callback given to canter: what canter does instead, in one line."""
import pytest

import canter
from canter.errors import CanterError


class BaseCallback:
    """Stable-Baselines3's BaseCallback as canter sees it (its methods that canter's hooks do not have)."""

    def init_callback(self, model):
        """SB3 calls it when training starts."""

    def _on_step(self) -> bool:
        return True


class StopTrainingOnRewardThreshold(BaseCallback):
    """As SB3's."""


class CheckpointCallback(BaseCallback):
    """As SB3's."""


class Mine(BaseCallback):
    """A user's own SB3 callback."""


def test_a_stable_baselines3_callback_names_canters_equivalent():
    """SB3's callbacks were refused 'callbacks takes a list of callback objects, got StopTrainingOnRewardThreshold'
    (one object) or '... has none of the hook methods' (in a list), which said neither why nor what to use. (Stand-ins
    with SB3's class names and methods: importing SB3 takes longer than the test may.)"""
    for given, needle in ((StopTrainingOnRewardThreshold(), "use target_reward=R$"),
                          ([CheckpointCallback()], "use checkpoint_every=N"),
                          (Mine(), r"use a canter Callback \(docs/training-control\.md\): its "
                                   r"on_env_step\(trainer, step\) is _on_step \(step: self\.locals\)")):
        name = type(given[0] if isinstance(given, list) else given).__name__
        with pytest.raises(CanterError, match=rf"^{name} is a Stable-Baselines3 callback, which canter does not call "
                                              rf"\(its hooks are on_train_start, .*, on_env_step\); {needle}"):
            canter.make_trainer("ppo", "CartPole-v1", callbacks=given)


@pytest.mark.parametrize("entry, needle", [
    ("EvalCallback", "eval_every=N and eval_episodes=E"),
    ("stable_baselines3.common.callbacks.CheckpointCallback", "checkpoint_every=N"),
    ("{'stable_baselines3.common.callbacks:StopTrainingOnRewardThreshold': {reward_threshold: 200}}", "target_reward=R"),
])
def test_a_stable_baselines3_callback_named_in_a_config_names_canters_equivalent(entry, needle):
    """callbacks: [EvalCallback] in YAML was "entries must be import paths 'module:Name'", and SB3's import path
    'not a callback class': neither said what canter does instead, as for the objects above."""
    with pytest.raises(CanterError, match=f"is a Stable-Baselines3 callback, which canter does not call; use {needle}"):
        canter.config.resolve_config("ppo", "CartPole-v1", sets=[f"callbacks=[{entry}]"])


def test_a_users_callback_class_of_an_sb3_name_is_not_taken_for_sb3s():
    """my_pkg:EvalCallback is the user's own class, imported when the run is built."""
    run, _ = canter.config.resolve_config("ppo", "CartPole-v1", sets=["callbacks=[my_pkg.cbs:EvalCallback]"])
    assert run.callbacks == ["my_pkg.cbs:EvalCallback"]
