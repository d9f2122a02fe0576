"""How image observations' axes are read (channels first or last) outside Atari, with the tiny envs of
``tests/image_envs.py``; and checkpoints of spaces an earlier canter read otherwise."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
import image_envs  # noqa: F401 (registers ImageSide-v0)
from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match
from canter.errors import CanterError
from canter.models.cnn import FlatEncoder, ImpalaResNet, NatureCNN, former_image_layout, image_layout, make_encoder
from checkpoint_support import write_checkpoint_json

ENV = "image_envs:ImageSide-v0"


@pytest.mark.parametrize("shape,encoder", [((48, 48, 12), NatureCNN), ((64, 64, 6), NatureCNN),
                                           ((36, 36, 2), NatureCNN), ((16, 16, 8), ImpalaResNet)],
                         ids=["4-rgb-frames", "2-rgb-frames", "2-channels", "small-8-channels"])
def test_channels_last_images_of_any_channel_count_get_a_cnn_over_their_pixels(shape, encoder):
    """Channels-last images were read as such only with 1, 3 or 4 channels: ``[84, 84, 12]`` (four RGB
    frames stacked) was read as 84 channels of 84 x 12 pixels, and ``[64, 64, 6]`` as a vector of raw
    0-255 values for the flat encoder. The channels are the smallest axis (Stable-Baselines3's rule)."""
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    assert image_layout(space) == "hwc"
    net = make_encoder(space)
    assert type(net) is encoder and net.in_shape == (shape[2], shape[0], shape[1])
    obs = torch.randint(0, 256, (3,) + shape, dtype=torch.uint8)
    with torch.no_grad():
        ref = net.features((obs.float() / 255.0).permute(0, 3, 1, 2).contiguous())
        torch.testing.assert_close(net(obs), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,layout", [((12, 84, 84), "chw"), ((3, 36, 36), "chw"), ((84, 84, 3), "hwc"),
                                          ((84, 84, 4), "hwc"), ((84, 84), "hw"), ((8, 8, 8), "chw")])
def test_layouts_read_as_before_stay(shape, layout):
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    assert image_layout(space) == former_image_layout(shape) == layout
    assert "image_layout" not in space_to_dict(space)  # descriptions of these spaces are as they were


def _old_checkpoint(run_dir, shape):
    """A run as canter wrote it before channels-last images of other channel counts were read as such: the
    env's space read the former way (the model is built so), and its description without ``image_layout``."""
    former = former_image_layout(shape) or ""

    class OldReading(image_envs.ImageSideEnv):
        def __init__(self, render_mode=None, **kw):
            super().__init__(shape=shape, render_mode=render_mode)
            self.observation_space.saved_image_layout = former

    canter.registry.register("env", f"OldReading-{'x'.join(map(str, shape))}")(OldReading)
    canter.train("ppo", f"OldReading-{'x'.join(map(str, shape))}", run_dir=run_dir, seed=0, max_steps=32, n_envs=2,
                 n_steps=16, eval_every=0, eval_episodes=1, quiet=True)
    meta = json.loads((run_dir / "checkpoints" / "last.json").read_text())
    assert "image_layout" not in meta["observation_space"]
    for name in ("config.yaml",):  # the run's env becomes the plain one, with the same space
        text = (run_dir / name).read_text().replace(f"OldReading-{'x'.join(map(str, shape))}", ENV)
        (run_dir / name).write_text(text.replace("env_kwargs: {}", f"env_kwargs: {{shape: {list(shape)}}}"))
    for name in ("last.json", "best.json"):
        path = run_dir / "checkpoints" / name
        if path.exists():
            meta = json.loads(path.read_text())
            meta["env"] = meta["config"]["env"] = ENV
            meta["config"]["env_kwargs"] = {"shape": list(shape)}
            write_checkpoint_json(path, meta)


@pytest.mark.parametrize("shape,old", [((40, 40, 12), ImpalaResNet), ((40, 40, 6), FlatEncoder)],
                         ids=["read-as-chw", "read-as-vector"])
def test_checkpoints_of_spaces_read_otherwise_before_keep_their_reading(tmp_path, capsys, shape, old):
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    d = space_to_dict(space)
    assert d["image_layout"] == "hwc"  # written where the reading changed
    assert image_layout(space_from_dict(d)) == "hwc"
    del d["image_layout"]  # a checkpoint written before
    saved = space_from_dict(d)
    assert image_layout(saved) == former_image_layout(shape) and spaces_match(saved, space)
    assert type(make_encoder(saved)) is old

    run = tmp_path / "old"
    _old_checkpoint(run, shape)
    agent = canter.load(run)  # the weights fit the model of the former reading
    assert type(agent.algorithm.model.encoder) is old
    obs, _ = image_envs.ImageSideEnv(shape=shape).reset(seed=0)
    assert agent.predict(obs) in (0, 1)
    with pytest.raises(CanterError, match=r"cannot resume: this run's model reads its \(40, 40, \d+\) image "
                                          r"observations as .*, as canter did before 2026-11-27"):
        canter.resume(run, max_steps=128)
    with pytest.raises(CanterError, match=r"init_from '.*': its networks read the image observations as canter "
                                          r"did before 2026-11-27"):
        canter.train("ppo", ENV, env_kwargs={"shape": list(shape)}, init_from=run, run_dir=tmp_path / "init",
                     max_steps=32, n_envs=2, n_steps=16, eval_every=0, quiet=True)


def test_a_run_on_stacked_rgb_frames_saves_loads_and_resumes(tmp_path):
    run = tmp_path / "new"
    canter.train("ppo", ENV, run_dir=run, seed=0, max_steps=64, n_envs=2, n_steps=32, eval_every=0,
                 eval_episodes=1, quiet=True, env_kwargs={"shape": [40, 40, 6]})
    meta = json.loads((run / "checkpoints" / "last.json").read_text())
    assert meta["observation_space"]["image_layout"] == "hwc"
    agent = canter.load(run)
    assert isinstance(agent.algorithm.model.encoder, NatureCNN) and agent.algorithm.model.encoder.in_shape == (6, 40, 40)
    canter.resume(run, max_steps=128)
    assert json.loads((run / "checkpoints" / "last.json").read_text())["step"] >= 128


@pytest.mark.parametrize("shape,layout", [((4, 36, 36, 3), "shwc"), ((4, 3, 36, 36), "schw"), ((2, 8, 8, 1), "shwc")])
def test_stacks_of_frames_are_images_of_their_channels_one_frame_after_the_other(shape, layout):
    """gymnasium's FrameStackObservation gives ``[S, H, W, C]`` (or ``[S, C, H, W]``) stacks: they were
    vectors of raw 0-255 values for the flat encoder (an MLP on 15,552 inputs at 4 x 36 x 36 x 3)."""
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    assert image_layout(space) == layout and former_image_layout(shape) is None
    net = make_encoder(space)
    s, c = shape[0], shape[-1] if layout == "shwc" else shape[1]
    assert net.in_shape == (s * c,) + (shape[1:3] if layout == "shwc" else shape[2:])
    obs = torch.randint(0, 256, (3,) + shape, dtype=torch.uint8)
    x = obs.float() / 255.0
    x = (x.permute(0, 1, 4, 2, 3) if layout == "shwc" else x).reshape((3,) + net.in_shape)
    with torch.no_grad():
        torch.testing.assert_close(net(obs), net.features(x.contiguous()), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(net(obs).detach(), net.features(x.contiguous()).detach(), rtol=1e-4, atol=1e-4)
    d = space_to_dict(space)
    assert d["image_layout"] == layout
    del d["image_layout"]  # a checkpoint written before: a vector still
    assert isinstance(make_encoder(space_from_dict(d)), FlatEncoder)


def test_a_run_on_gymnasium_frame_stacks_trains_a_cnn_and_loads(tmp_path):
    run = tmp_path / "stack"
    canter.train("dqn", "image_envs:StackedImageSide-v0", run_dir=run, seed=0, max_steps=64, learning_starts=32,
                 batch_size=8, buffer_size=200, eval_every=0, eval_episodes=1, quiet=True,
                 env_kwargs={"shape": [36, 36, 3]})
    agent = canter.load(run)
    encoder = agent.algorithm.modules()["q"].encoder
    assert isinstance(encoder, NatureCNN) and encoder.in_shape == (12, 36, 36)
    obs, _ = image_envs.stacked_image_side(shape=(36, 36, 3)).reset(seed=0)
    assert obs.shape == (4, 36, 36, 3) and agent.predict(obs) in (0, 1)


def _packed(image_shape):
    from canter.envs.packing import ObservationPacker

    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, image_shape, np.uint8),
                             "vec": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)})
    return ObservationPacker(space, gym.spaces.Discrete(2)).space


def test_packed_checkpoints_keep_the_reading_of_their_images():
    """A Dict entry [40, 40, 12] was read as 40 channels of 40 x 12 pixels; a checkpoint
    written then (no image_layouts) builds that model still."""
    from canter.models.cnn import MultiInputEncoder

    packed = _packed((40, 40, 12))
    d = space_to_dict(packed)
    assert d["image_layouts"] == ["hwc"] and make_encoder(space_from_dict(d)).convs[0].in_shape == (12, 40, 40)
    del d["image_layouts"]
    old = space_from_dict(d)
    enc = make_encoder(old)
    assert isinstance(enc, MultiInputEncoder) and enc.convs[0].in_shape == (40, 40, 12)
    assert spaces_match(old, packed) and "image_layouts" not in space_to_dict(old)
    with pytest.raises(CanterError, match="cannot resume: this run's model reads the images of its observations"):
        from canter.resume_checks import check_image_layout_kept

        check_image_layout_kept(old)


def test_an_entry_packed_as_values_before_still_matches_its_env():
    """A Dict entry [40, 40, 6] was packed as values (no image): the checkpoint's plain Box matches the env's
    packing of the same entries and bounds now, but is not read alike (resume refuses it)."""
    from canter.envs.spaces import read_alike

    packed = _packed((40, 40, 6))
    assert packed.images == ((0, (40, 40, 6)),)
    before = gym.spaces.Box(packed.low.astype(np.float32), packed.high.astype(np.float32), dtype=np.float32)
    before.packed_layout = packed.packed_layout
    old = space_from_dict(json.loads(json.dumps(space_to_dict(before))))
    assert spaces_match(old, packed) and not read_alike(old, packed)
    assert isinstance(make_encoder(old), FlatEncoder)
    other = _packed((40, 40, 7))
    assert not spaces_match(old, other)
