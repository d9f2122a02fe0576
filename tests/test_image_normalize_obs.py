"""normalize_obs leaves uint8 image observations as pixels, in every algorithm, as it leaves the images
inside Dict observations (the convolutional encoders scale pixels themselves)."""
from __future__ import annotations

import numpy as np
import pytest

import canter
from canter.data.dataset import collect
from canter.errors import CanterError

IMAGE_ENV = "image_dict_env:ImageReach-v0"  # 36 x 36 x 1 uint8 images, one Box action


def _column(column: int) -> np.ndarray:
    obs = np.zeros((1, 36, 36, 1), np.uint8)
    obs[:, :, column] = 255
    return obs


def test_td3bc_does_not_normalise_image_pixels_by_the_datasets_statistics(tmp_path):
    """TD3+BC (normalize_obs true by default) divided each pixel by its std in the dataset + 1e-3, unclipped: a
    column never lit in the dataset became 255,000 when lit at evaluation, and the encoder took the floats as
    scaled pixels; images inside Dict observations were left as they are. Image pixels now stay pixels."""
    data = collect(IMAGE_ENV, 20, None, seed=0)
    lit = set(np.argmax(data.obs[:, 0, :, 0], axis=1).tolist())
    column = min(set(range(36)) - lit)
    trainer = canter.make_trainer("td3bc", None, dataset=str(data.save(tmp_path / "data")), max_steps=1,
                                  eval_episodes=1, run_dir=tmp_path / "run")
    try:
        trainer.setup()
        agent = trainer.agent
        assert agent.obs_rms is None and agent.images_raw
        out = agent.normalize_obs(_column(column))
        assert out.dtype == np.uint8 and out.max() == 255
        assert agent.predict(_column(column)[0]).shape == (1,)
    finally:
        trainer.close()


def test_online_normalize_obs_leaves_image_pixels(tmp_path):
    """PPO with normalize_obs on images divided pixels by running statistics (clipped to 10) and stored the
    rollout's observations as floats: pixels now stay uint8 there too."""
    trainer = canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, max_steps=8,
                                  run_dir=tmp_path / "run")
    try:
        agent = trainer.agent
        out = agent.normalize_obs(_column(3), update=True)
        assert agent.obs_rms is None and out.dtype == np.uint8 and out.max() == 255
        trainer.setup()
        assert not trainer.buffer.obs.dtype.is_floating_point
    finally:
        trainer.close()


def test_an_image_agent_saved_with_pixel_statistics_keeps_normalising(tmp_path):
    """An image agent saved before pixels were left alone carries obs_rms: its networks were trained on
    normalised pixels, and it keeps normalising them when loaded."""
    trainer = canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, max_steps=8,
                                  run_dir=tmp_path / "run")
    try:
        state = trainer.agent.state_dict()
        state["obs_rms"] = {"mean": np.full((36, 36, 1), 100.0), "var": np.full((36, 36, 1), 4.0), "count": 10.0}
        trainer.agent.load_state_dict(state)
        out = trainer.agent.normalize_obs(_column(3))
        assert out.dtype == np.float32 and out.max() == 10.0 and out.min() == -10.0  # (0 - 100) / 2, clipped
    finally:
        trainer.close()


def test_init_from_an_image_agent_saved_with_pixel_statistics(tmp_path):
    """init_from a run saved before pixels were left alone (its agent state carries obs_rms) with
    normalize_obs=true was refused with 'set normalize_obs=true', the setting it had: a run whose images
    are never normalised counted as one that does not normalise. It now starts from the source's statistics
    too, as loading it does; with normalize_obs=false it is still refused, naming normalize_obs=true."""
    from canter.checkpoint import find_checkpoint, load_checkpoint, save_checkpoint

    canter.train("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, n_envs=1, max_steps=8, run_dir=tmp_path / "src")
    base = find_checkpoint(tmp_path / "src")
    state, meta = load_checkpoint(base)
    mean, var = np.full((36, 36, 1), 100.0), np.full((36, 36, 1), 4.0)
    state["agent"]["obs_rms"] = {"mean": mean, "var": var, "count": np.float64(10.0)}
    save_checkpoint(base, state, meta)
    with canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, n_envs=1, max_steps=8,
                             init_from=str(tmp_path / "src"), run_dir=None) as trainer:
        agent = trainer.agent
        assert agent.obs_rms is not None and np.allclose(agent.obs_rms.mean, 100.0)
        out = agent.normalize_obs(_column(3))
        assert out.dtype == np.float32 and out.min() == -10.0
    with pytest.raises(CanterError, match="normalize_obs=true"):
        canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=False, n_steps=8, n_envs=1, max_steps=8,
                            init_from=str(tmp_path / "src"), run_dir=None)


def test_explorers_of_an_image_learner_with_pixel_statistics_normalise_as_it_does():
    """A learner holding pixel statistics saved before 2026-11-27 (resumed, or started with init_from) sends them
    to its explorers, whose fresh agents (normalize_obs on images: no obs_rms) dropped them and acted on raw
    pixels with networks trained on normalised ones. They now take the statistics as the learner did."""
    from canter.distributed.explorer import explorer_weights, load_explorer_weights

    with canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, n_envs=1, max_steps=8,
                             run_dir=None) as learner, \
            canter.make_trainer("ppo", IMAGE_ENV, normalize_obs=True, n_steps=8, n_envs=1, max_steps=8,
                                run_dir=None) as other:
        state = learner.agent.state_dict()
        state["obs_rms"] = {"mean": np.full((36, 36, 1), 100.0), "var": np.full((36, 36, 1), 4.0), "count": 10.0}
        learner.agent.load_state_dict(state)
        explorer = other.agent
        load_explorer_weights(explorer, explorer_weights(learner.agent))
        expected = learner.agent.normalize_obs(_column(3))
        np.testing.assert_array_equal(explorer.normalize_obs(_column(3)), expected)
        assert expected.dtype == np.float32
