"""An offline run changes its evaluation env with eval_env_kwargs, not env_kwargs (those the dataset records)."""
from __future__ import annotations

import pytest

import canter
from canter.data.dataset import collect
from canter.errors import CanterError


def test_env_kwargs_other_than_the_datasets_point_to_eval_env_kwargs(tmp_path):
    """An evaluation-only change given as env_kwargs ({max_episode_steps: 200}) was refused saying only 'leave
    env_kwargs out', not how to change the evaluation env: the error now names eval_env_kwargs
    (--eval-env-kwargs), which does so."""
    path = str(collect("CartPole-v1", 50, None, seed=0).save(tmp_path / "data"))
    with pytest.raises(CanterError, match=r"eval_env_kwargs \(--eval-env-kwargs\)"):
        canter.make_trainer("bc", None, dataset=path, env_kwargs={"max_episode_steps": 20})
    trainer = canter.make_trainer("bc", None, dataset=path, eval_env_kwargs={"max_episode_steps": 20},
                                  max_steps=10, eval_every=10, eval_episodes=2, run_dir=tmp_path / "run")
    try:
        result = trainer.evaluate()
    finally:
        trainer.close()
    assert trainer.run.env_kwargs == {} and max(result.lengths) <= 20
