"""The Atari envs' observations are channels-first frame stacks, ``uint8 [C * frame_stack, height, width]``, whatever
their sizes: the encoders read them so (in training, from a checkpoint, on resume), where the shape rule alone
(channels-last when the last axis is shorter than the first) read RGB stacks of small screens (``[12, 10, 10]``) and
stacks longer than the screen is wide (``[12, 8, 8]``) as channels-last images and convolved across the frames."""
from __future__ import annotations

import pytest

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

from canter.envs.spaces import space_from_dict, space_to_dict  # noqa: E402
from canter.models.cnn import image_layout, make_encoder  # noqa: E402
from canter.resume_checks import check_env_layout_kept, check_image_layout_kept  # noqa: E402
from checkpoint_support import write_checkpoint_json  # noqa: E402
from support import run_cli  # noqa: E402

GAME = "ALE/Breakout-v5"


@pytest.mark.parametrize("vectorization", ["native", "sync"])
@pytest.mark.parametrize("kwargs,shape", [
    ({"grayscale": False, "screen_size": 10}, (12, 10, 10)),
    ({"frame_stack": 12, "screen_size": 8}, (12, 8, 8)),
    ({"frame_stack": 4}, (4, 84, 84)),
])
def test_atari_stacks_are_read_channels_first(vectorization, kwargs, shape):
    from canter.envs.atari import make_atari_env, make_atari_vec

    env = make_atari_vec(GAME, 1, vectorization, env_kwargs=kwargs)
    space = env.single_observation_space
    env.close()
    single = make_atari_env(GAME, env_kwargs=kwargs)
    assert space.shape == single.observation_space.shape == shape
    assert image_layout(space) == image_layout(single.observation_space) == "chw"
    single.close()
    assert make_encoder(space).in_shape == shape
    saved = space_from_dict(space_to_dict(space))  # a checkpoint's space reads them as the run did
    assert image_layout(saved) == "chw" and make_encoder(saved).in_shape == shape
    check_image_layout_kept(saved)  # and a resume is not refused


@pytest.mark.slow
def test_a_small_rgb_screen_run_trains_resumes_and_evaluates(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "ppo", "--env", GAME, "--n-envs", "1", "--env-kwargs", "{grayscale: false, screen_size: 10}",
            "--set", "n_steps=16", "--set", "batch_size=16", "--eval-episodes", "0", "--quiet", "--run-dir", str(run)]
    code, _, err = run_cli(capsys, *argv, "--max-steps", "16")
    assert code == 0, err
    code, _, err = run_cli(capsys, "train", "--resume", str(run), "--max-steps", "32", "--quiet")
    assert code == 0, err
    import canter

    agent = canter.load(str(run))
    assert agent.algorithm.model.encoder.in_shape == (12, 10, 10)


def test_resuming_a_run_that_read_the_stacks_channels_last_is_one_line():
    """A checkpoint of such a run saved before the envs gave their layout reads the stacks as channels-last; its
    weights fit no model of the env's channels-first stacks (a state_dict RuntimeError traceback on resume)."""
    import gymnasium as gym
    import numpy as np

    from canter import CanterError
    from canter.envs.atari import make_atari_vec

    env = make_atari_vec(GAME, 1, "native", env_kwargs={"grayscale": False, "screen_size": 10})
    saved = gym.spaces.Box(0, 255, (12, 10, 10), np.uint8)  # as the checkpoint describes it: image_layout hwc
    with pytest.raises(CanterError, match=r"reads its \(12, 10, 10\) image observations as channels-last"):
        check_env_layout_kept(saved, env.single_observation_space)
    check_env_layout_kept(space_from_dict(space_to_dict(env.single_observation_space)), env.single_observation_space)
    env.close()


@pytest.mark.slow
def _run_saved_before(tmp_path, capsys, monkeypatch):
    """A small RGB run trained as the envs were before they gave their layout (none given)."""
    import canter.envs.atari as atari

    run = tmp_path / "run"
    with monkeypatch.context() as m:  # the envs as they were: no layout given
        m.setattr(atari, "_channels_first", lambda space: None)
        code, _, err = run_cli(capsys, "train", "ppo", "--env", GAME, "--n-envs", "1", "--env-kwargs",
                               "{grayscale: false, screen_size: 10}", "--set", "n_steps=16", "--set", "batch_size=16",
                               "--eval-episodes", "0", "--quiet", "--run-dir", str(run), "--max-steps", "16")
        assert code == 0, err
    return run


def test_resuming_a_run_saved_before_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    from support import assert_one_line_error

    run = _run_saved_before(tmp_path, capsys, monkeypatch)
    before = (run / "checkpoints" / "last.json").read_text()
    code, _, err = run_cli(capsys, "train", "--resume", str(run), "--max-steps", "32", "--quiet")
    assert_one_line_error(code, err, "cannot resume", "channels-last", "train a new run")
    assert (run / "checkpoints" / "last.json").read_text() == before
    import canter

    assert canter.load(str(run)).algorithm.model.encoder.in_shape == (10, 12, 10)  # load still runs it as trained


def _without_image_layout(run):
    """``run``'s ``last`` checkpoint as canter wrote it before it recorded image layouts (before 2026-11-27): the
    observation space's description without ``image_layout``, which reads as :func:`former_image_layout` did."""
    import json

    path = run / "checkpoints" / "last.json"
    meta = json.loads(path.read_text())
    del meta["observation_space"]["image_layout"]
    write_checkpoint_json(path, meta)


def test_a_checkpoint_that_read_the_stacks_channels_first_before_the_layouts_were_recorded_is_not_refused():
    """Such a checkpoint (``[12, 10, 10]`` described without ``image_layout``) read the stacks channels-first, as
    the Atari envs now give them: the resume check compares it with the env's layout, where it compared it with
    the shape rule's channels-last and refused it ("canter now reads them as channels-last")."""
    import gymnasium as gym
    import numpy as np

    from canter import CanterError
    from canter.envs.make import given_image_layout

    old = {k: v for k, v in space_to_dict(gym.spaces.Box(0, 255, (12, 10, 10), np.uint8)).items()
           if k != "image_layout"}
    assert given_image_layout(GAME) == given_image_layout("BreakoutNoFrameskip-v4") == "chw"
    assert given_image_layout("CartPole-v1") is None
    check_image_layout_kept(space_from_dict(old), env_layout=given_image_layout(GAME))
    with pytest.raises(CanterError, match="channels-last"):  # an env read by shape: still refused
        check_image_layout_kept(space_from_dict(old), env_layout=given_image_layout("CartPole-v1"))


@pytest.mark.slow
def test_resuming_a_run_saved_before_the_layouts_were_recorded_continues(tmp_path, capsys):
    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "ppo", "--env", GAME, "--n-envs", "1", "--env-kwargs",
                           "{grayscale: false, screen_size: 10}", "--set", "n_steps=16", "--set", "batch_size=16",
                           "--eval-episodes", "0", "--quiet", "--run-dir", str(run), "--max-steps", "16")
    assert code == 0, err
    _without_image_layout(run)
    code, _, err = run_cli(capsys, "train", "--resume", str(run), "--max-steps", "32", "--quiet")
    assert code == 0, err
    import canter

    assert canter.load(str(run)).algorithm.model.encoder.in_shape == (12, 10, 10)


def test_init_from_compares_the_sources_reading_with_the_envs_layout():
    """A source that read the stacks channels-first before layouts were recorded starts a run (it was refused as
    read 'as canter did before 2026-11-27'); one that read them channels-last by shape (saved before the Atari
    envs gave their layout) is refused naming both readings (it was a state_dict size mismatch asking for the
    hyperparameters that shape the networks)."""
    import gymnasium as gym
    import numpy as np

    from canter import CanterError
    from canter.envs.atari import make_atari_vec
    from canter.init_from import _check_image_reading

    env = make_atari_vec(GAME, 1, "native", env_kwargs={"grayscale": False, "screen_size": 10})
    ours = env.single_observation_space
    env.close()
    before_layouts = {k: v for k, v in space_to_dict(gym.spaces.Box(0, 255, (12, 10, 10), np.uint8)).items()
                      if k != "image_layout"}
    _check_image_reading("src", space_from_dict(before_layouts), ours)
    channels_last = space_from_dict(space_to_dict(gym.spaces.Box(0, 255, (12, 10, 10), np.uint8)))
    with pytest.raises(CanterError, match=r"init_from 'src': .* as channels-last .* as channels-first"):
        _check_image_reading("src", channels_last, ours)


@pytest.mark.slow
def test_init_from_a_run_saved_before_the_layouts_were_recorded(tmp_path, capsys):
    argv = ["train", "ppo", "--env", GAME, "--n-envs", "1", "--env-kwargs", "{grayscale: false, screen_size: 10}",
            "--set", "n_steps=16", "--set", "batch_size=16", "--eval-episodes", "0", "--quiet", "--max-steps", "16"]
    code, _, err = run_cli(capsys, *argv, "--run-dir", str(tmp_path / "source"))
    assert code == 0, err
    _without_image_layout(tmp_path / "source")
    code, _, err = run_cli(capsys, *argv, "--run-dir", str(tmp_path / "run"), "--set",
                           f"init_from={tmp_path / 'source'}")
    assert code == 0, err


def test_the_layout_refusal_comes_before_the_trainer_is_built(tmp_path, capsys, monkeypatch):
    """check_env_layout_kept ran on the built trainer's agent: the envs were made first and, for a run with Ray
    explorers, Ray started, only to be refused."""
    import canter.api
    from support import assert_one_line_error

    run = _run_saved_before(tmp_path, capsys, monkeypatch)
    built: list[object] = []
    real = canter.api._build
    monkeypatch.setattr(canter.api, "_build", lambda *a, **k: built.append(a) or real(*a, **k))
    code, _, err = run_cli(capsys, "train", "--resume", str(run), "--max-steps", "32", "--quiet")
    assert_one_line_error(code, err, "cannot resume", "channels-last", "train a new run")
    assert built == []
