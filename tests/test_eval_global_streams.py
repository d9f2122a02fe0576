"""Periodic evaluation leaves the global random streams (Python's ``random``, NumPy's legacy ``np.random``, torch's)
where training had them: with an env that draws its noise from them, a run with evaluations trains exactly as the
same run without."""
import torch

import canter
import global_noise_env  # noqa: F401 (registers GlobalNoise-v0)


def _training(eval_every):
    trainer = canter.make_trainer("ppo", "GlobalNoise-v0", seed=3, max_steps=256, n_envs=2, n_steps=32, batch_size=32,
                                  n_epochs=1, eval_every=eval_every, eval_episodes=2)
    with trainer:
        returns = [e.episode_return for rec in trainer() for e in rec.episodes]
    return returns, torch.cat([p.detach().flatten() for p in trainer.algorithm.model.parameters()])


def test_evaluations_do_not_move_the_training_streams():
    (plain, plain_weights), (evaluated, evaluated_weights) = _training(0), _training(64)
    assert len(plain) > 10 and evaluated == plain
    assert torch.equal(evaluated_weights, plain_weights)
