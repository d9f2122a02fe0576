"""A shipped preset's target_reward on a long run evaluated only at its end (eval_every 0, max_steps over 1e7) is
dropped, as it is with eval_episodes 0: the run was refused for a target the user never gave."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


@pytest.mark.parametrize("how", ["sets", "kwargs"])
def test_a_presets_target_on_a_long_run_without_evaluations_is_dropped(how):
    """canter train ppo --env CartPole-v1 --eval-every 0 --max-steps 2e7 was refused for PPO's preset's 475."""
    given = ({"sets": ["eval_every=0", "max_steps=2e7"]} if how == "sets"
             else {"eval_every": 0, "max_steps": 20_000_000})
    run, _ = resolve_config("ppo", "CartPole-v1", **given)
    assert run.target_reward is None and run.eval_every == 0


def test_a_target_the_user_gives_is_still_refused_and_short_runs_keep_the_presets():
    """A target given by the user stays refused there; a short run or one evaluating keeps the preset's target."""
    with pytest.raises(CanterError, match=r"'target_reward' \(400"):
        resolve_config("ppo", "CartPole-v1", eval_every=0, max_steps=20_000_000, target_reward=400)
    assert resolve_config("ppo", "CartPole-v1", eval_every=0, max_steps=50_000)[0].target_reward == 475
    assert resolve_config("ppo", "CartPole-v1", eval_every=1000, max_steps=20_000_000)[0].target_reward == 475


def test_a_resume_extending_a_run_past_1e7_steps_keeps_its_target(tmp_path):
    """A run trained with eval_every 0 and a target, resumed with max_steps over 1e7, was refused, told to drop the
    target with --set, which a resume does not take (nor can it change eval_every): it now resumes with its target."""
    from canter.api import resume_trainer, train

    run_dir = tmp_path / "run"
    train("ppo", "CartPole-v1", run_dir=run_dir, quiet=True, eval_every=0, max_steps=64, n_envs=1, target_reward=475,
          hparams={"n_steps": 32, "batch_size": 32})
    trainer = resume_trainer(run_dir, max_steps=20_000_000)
    try:
        assert trainer.run.target_reward == 475 and trainer.run.max_steps == 20_000_000
    finally:
        trainer.close()
