"""Minari datasets: the env spec a dataset records and the env an offline run evaluates on."""
from __future__ import annotations

import warnings

import pytest

from canter.data.dataset import TransitionDataset
from canter.errors import CanterWarning


def _write(dataset_id: str, env) -> None:
    import minari
    import numpy as np
    from minari.data_collector import EpisodeBuffer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Minari asks for a description, an author, ...
        minari.create_dataset_from_buffers(dataset_id, [EpisodeBuffer(
            id=0, observations=np.zeros((4, 3), np.float32), actions=np.zeros((3, 1), np.float32),
            rewards=-np.ones(3), terminations=np.zeros(3, bool), truncations=np.array([False, False, True]),
            infos={})], env=env.spec, data_format="arrow", algorithm_name="test")


def test_a_minari_env_spec_with_wrappers_that_the_eval_env_drops_is_warned_about(tmp_path, monkeypatch):
    """Minari records the wrappers of the env it was given (``EnvSpec.additional_wrappers``); canter makes its
    evaluation env from the id and kwargs, so a dataset of ClipReward'd Pendulum evaluated on unclipped rewards
    without a word (spaces that a wrapper changes are refused as a space mismatch; ClipReward changes none)."""
    pytest.importorskip("minari")
    import gymnasium as gym

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _write("pendulum/clipped-v0", gym.wrappers.ClipReward(gym.make("Pendulum-v1"), -1.0, 0.0))
    with pytest.warns(CanterWarning, match=r"'pendulum/clipped-v0' records its env Pendulum-v1 wrapped in "
                                           r"ClipReward; canter evaluates on Pendulum-v1 without them"):
        data = TransitionDataset.load("minari:pendulum/clipped-v0")
    assert data.info["env_wrappers"] == ["ClipReward"] and len(data) == 3
    _write("pendulum/plain-v0", gym.make("Pendulum-v1"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CanterWarning)
        assert "env_wrappers" not in TransitionDataset.load("minari:pendulum/plain-v0").info


def test_a_minari_dataset_saved_as_a_canter_dataset_still_warns_of_its_dropped_wrappers(tmp_path, monkeypatch):
    """from_minari warned and recorded info.env_wrappers, but the dataset saved as a canter dataset (save()) and
    trained on from that file evaluated on Pendulum-v1 without ClipReward without a word."""
    pytest.importorskip("minari")
    import gymnasium as gym

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _write("pendulum/clipped-v0", gym.wrappers.ClipReward(gym.make("Pendulum-v1"), -1.0, 0.0))
    with pytest.warns(CanterWarning):
        TransitionDataset.load("minari:pendulum/clipped-v0").save(tmp_path / "clipped")
    with pytest.warns(CanterWarning, match=r"clipped \(from minari:pendulum/clipped-v0\) records its env Pendulum-v1 "
                                           r"wrapped in ClipReward; canter evaluates on Pendulum-v1 without them"):
        assert TransitionDataset.load(tmp_path / "clipped").info["env_wrappers"] == ["ClipReward"]
    _write("pendulum/plain-v0", gym.make("Pendulum-v1"))
    TransitionDataset.load("minari:pendulum/plain-v0").save(tmp_path / "plain")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CanterWarning)
        assert "env_wrappers" not in TransitionDataset.load(tmp_path / "plain").info


def test_resuming_on_a_minari_dataset_replaced_since_is_refused(tmp_path, monkeypatch, capsys):
    """A Minari dataset has no save id; a run resumed on another dataset written under its id since (here 2.5x as many
    transitions), saying resume_exact: true. Its size is checked now, and the run is left as it was."""
    pytest.importorskip("minari")
    import shutil

    import canter
    from canter.data.dataset import collect
    from canter.resume_checks import resume_dataset
    from minari.storage import get_dataset_path
    from support import assert_one_line_error, run_cli, snapshot

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    held = collect("CartPole-v1", 60, None, seed=1).to_minari("cartpole/replaced-v0")
    canter.train("bc", run_dir=tmp_path / "run", max_steps=10, dataset="minari:cartpole/replaced-v0",
                 gradient_steps=10, eval_episodes=0, net_arch=[8], quiet=True)
    cfg = {"dataset": "minari:cartpole/replaced-v0"}
    resume_dataset(tmp_path / "run", cfg, {"counters": {"dataset_transitions": held}}, None)  # the same: taken
    shutil.rmtree(get_dataset_path("cartpole/replaced-v0"))
    now = collect("CartPole-v1", 150, None, seed=2).to_minari("cartpole/replaced-v0")
    assert now != held
    before = snapshot(tmp_path / "run")
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "run"), "--max-steps", "20", "--quiet")
    assert_one_line_error(code, err, f"Minari dataset 'cartpole/replaced-v0' holds {now} transitions",
                          f"trained on {held}:",
                          "was replaced since this run started")
    assert snapshot(tmp_path / "run") == before
