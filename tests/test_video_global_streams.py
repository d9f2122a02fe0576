"""A recording during training (``record_every``) leaves the global random streams where training had them: with an
env that draws its noise from them, a run that records videos trains exactly as the same run without."""
import pytest
import torch

import canter
import global_noise_env  # noqa: F401 (registers GlobalNoise-v0)
from canter.checkpoint import flatten_state

pytest.importorskip("imageio")


def _weights(run_dir, record_every):
    agent = canter.train("ppo", env="GlobalNoise-v0", seed=3, max_steps=256, n_envs=2, n_steps=32,
                         batch_size=32, n_epochs=1, eval_episodes=0, record_every=record_every, run_dir=run_dir)
    return flatten_state(agent.state_dict())[1]


@pytest.mark.slow
def test_recordings_do_not_move_the_training_streams(tmp_path):
    plain, recorded = _weights(tmp_path / "plain", 0), _weights(tmp_path / "recorded", 64)
    assert list((tmp_path / "recorded" / "videos").glob("*.mp4"))
    assert plain.keys() == recorded.keys()
    assert all(torch.equal(plain[k], recorded[k]) for k in plain if isinstance(plain[k], torch.Tensor))
