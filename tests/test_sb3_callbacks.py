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


def test_tensors_and_numpy_scalars_an_after_update_hook_logs_are_written_as_numbers(tmp_path):
    """An SB3 port's ``self.logger.record("custom/loss", loss)`` as an after_update hook's ``losses["custom/loss"] =
    loss``: a 0-d torch tensor passed the number check (``float()`` takes it), then updates.parquet could not be
    written (pyarrow's ArrowInvalid traceback when the run ended, summary 'interrupted'). It is logged as its number;
    a tensor of several values is refused in one line."""
    import numpy as np
    import pyarrow.parquet as pq
    import torch

    def record(trainer, losses):
        losses["custom/loss"], losses["custom/np"] = torch.tensor(0.5, requires_grad=True) * 1, np.float32(0.25)

    quick = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, max_steps=64, eval_every=0, eval_episodes=1,
                 tensorboard=False)
    trainer = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", hooks={"after_update": record},
                                  **quick)
    records = list(trainer())
    trainer.close()
    assert all(type(r.losses["custom/loss"]) is float and type(r.losses["custom/np"]) is float for r in records)
    logged = pq.read_table(tmp_path / "run" / "updates.parquet").to_pydict()
    assert logged["custom/loss"] == [0.5, 0.5] and logged["custom/np"] == [0.25, 0.25]

    def several(trainer, losses):
        losses["custom/v"] = torch.tensor([1.0])

    with pytest.raises(CanterError, match=r"left losses\['custom/v'\] = tensor\(\[1\.\]\): the values in losses are "
                                          r"logged as numbers"):
        canter.train("ppo", "CartPole-v1", run_dir=None, hooks={"after_update": several}, **quick)
