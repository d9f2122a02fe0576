"""Dict and Tuple observations with image entries: packed with their layout (PackedBox), encoded by
a CNN per image beside the other entries (the ``multi`` encoder), trained, saved and loaded."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.envs.make import make_vec_env
from canter.envs.packing import ObservationPacker, PackedBox
from canter.envs.spaces import describe_space, space_from_dict, space_to_dict, spaces_match
from canter.errors import CanterError
from canter.models.cnn import ImpalaResNet, MultiInputEncoder, NatureCNN, make_encoder
from support import assert_train_refused

ENV = "image_dict_env:DictImageCue-v0"
IMAGE = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)


def _dict(vec: gym.Space, image: gym.Space = IMAGE) -> gym.spaces.Dict:
    return gym.spaces.Dict({"vec": vec, "img": image, "d": gym.spaces.Discrete(4)})


@pytest.mark.parametrize("float_entry", [False, True])
def test_images_are_packed_in_place_with_their_layout(float_entry):
    """Keys in gymnasium's order (d, img, vec): the one-hot, the pixels, then the vector; uint8 when
    every entry fits in a byte, else float32 (the pixels are the same integers either way)."""
    vec = gym.spaces.Box(-1.0, 1.0, (3,), np.float32) if float_entry else gym.spaces.MultiBinary(3)
    space = _dict(vec)
    packer = ObservationPacker(space, gym.spaces.Discrete(2))
    packed = packer.space
    assert isinstance(packed, PackedBox) and packed.shape == (4 + 40 * 40 * 3 + 3,)
    assert packed.dtype == (np.float32 if float_entry else np.uint8)
    assert packed.images == ((4, (40, 40, 3)),)
    assert packed.vector_slices() == [slice(0, 4), slice(4804, 4807)]
    space.seed(0)
    obs = space.sample()
    flat = packer(obs)
    assert flat.dtype == packed.dtype and packed.contains(flat)
    (cols, shape), = packed.image_slices()
    np.testing.assert_array_equal(flat[cols].reshape(shape), obs["img"])
    np.testing.assert_array_equal(flat[:4], np.eye(4)[obs["d"]])
    np.testing.assert_allclose(flat[4804:], obs["vec"])


def test_packed_spaces_round_trip_through_json():
    """The pixels' bounds are implied (0-255); only the other columns' bounds are written, so a large
    image with non-uniform bounds beside it still serialises, in a small description."""
    space = ObservationPacker(_dict(gym.spaces.Box(-np.inf, np.array([1.0, 2.0, 3.0], np.float32), (3,), np.float32)),
                              gym.spaces.Discrete(2)).space
    d = json.loads(json.dumps(space_to_dict(space)))
    assert len(json.dumps(d)) < 400
    back = space_from_dict(d)
    assert isinstance(back, PackedBox) and back.images == space.images and back.dtype == space.dtype
    np.testing.assert_array_equal(back.low, space.low)
    np.testing.assert_array_equal(back.high, space.high)
    assert spaces_match(space, back)
    other = ObservationPacker(_dict(gym.spaces.Box(-1.0, 1.0, (3,), np.float32)), gym.spaces.Discrete(2)).space
    assert not spaces_match(space, other)
    assert "packing images (40, 40, 3) and 7 other values" in describe_space(back)



@pytest.mark.parametrize("space", [gym.spaces.Dict({"img": IMAGE}), gym.spaces.Tuple((IMAGE, IMAGE))],
                         ids=["dict-one-image", "tuple-two-images"])
def test_packed_spaces_of_images_only_round_trip(space, tmp_path):
    """No column but pixels: nothing else to describe (this once failed at the first checkpoint)."""
    packed = ObservationPacker(space, gym.spaces.Discrete(2)).space
    assert packed.vector_slices() == []
    back = space_from_dict(json.loads(json.dumps(space_to_dict(packed))))
    assert isinstance(back, PackedBox) and back.images == packed.images and spaces_match(packed, back)
    np.testing.assert_array_equal(back.low, packed.low)
    np.testing.assert_array_equal(back.high, packed.high)

def test_the_multi_encoder_picks_a_cnn_per_image_by_size():
    small = gym.spaces.Box(0, 255, (16, 16), np.uint8)
    structured = gym.spaces.Tuple((IMAGE, gym.spaces.Box(-1, 1, (2,), np.float32), small))
    packer = ObservationPacker(structured, gym.spaces.Discrete(2))
    enc = make_encoder(packer.space)
    assert isinstance(enc, MultiInputEncoder)
    assert [type(c) for c in enc.convs] == [NatureCNN, ImpalaResNet]  # Nature's smallest input is 36 pixels
    assert enc.out_dim == 2 * 256 + 2
    assert all(type(c) is ImpalaResNet for c in make_encoder(packer.space, "impala").convs)
    structured.seed(0)
    x = torch.from_numpy(np.stack([packer(structured.sample()) for _ in range(3)]))
    with torch.no_grad():
        out = enc(x)
    assert out.shape == (3, 514)
    np.testing.assert_array_equal(out[:, 512:].numpy(), x[:, 4800:4802].numpy())  # the vector entry as it is
    with pytest.raises(CanterError, match="encoder 'multi' needs Dict or Tuple observations with image entries"):
        make_encoder(gym.spaces.Box(-1, 1, (3,)), "multi")


@pytest.mark.parametrize("shape", [(16, 16, 3), (2, 8, 8), (35, 35)], ids=["hwc16", "chw8", "hw35"])
def test_an_image_observation_below_36_pixels_a_side_gets_the_impala_encoder(shape):
    """A plain image observation smaller than Nature's smallest input: ``auto`` picked ``nature``, whose
    convolutions raised a torch RuntimeError (a traceback) while the model was built; the multi
    encoder already picked ``impala`` for such images. Naming ``nature`` is a one-line error."""
    from canter.registry import register
    from support import Box22Actions

    space = gym.spaces.Box(0, 255, shape, np.uint8)
    assert isinstance(make_encoder(space), ImpalaResNet)
    assert isinstance(make_encoder(gym.spaces.Box(0, 255, (36, 36), np.uint8)), NatureCNN)
    with pytest.raises(CanterError, match="the nature encoder needs images of at least 36 pixels a side"):
        make_encoder(space, "nature")
    with pytest.raises(CanterError, match="the nature_pool encoder needs images of at least 36 pixels a side"):
        make_encoder(space, "nature_pool")  # (its message named the nature encoder)

    class SmallImage(Box22Actions):
        observation_space, action_space = space, gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return np.zeros(shape, np.uint8), {}

        def step(self, action):
            self.t += 1
            return np.full(shape, self.t, np.uint8), float(action), False, self.t >= 8, {}

    name = f"SmallImage-{'x'.join(map(str, shape))}-test"
    register("env", name)(lambda render_mode=None, **kw: SmallImage())
    trainer = canter.make_trainer("dqn", name, max_steps=48, learning_starts=32, batch_size=8, eval_every=0,
                                  eval_episodes=1)
    list(trainer())
    assert trainer.algorithm.updates > 0 and trainer.agent.predict(np.zeros(shape, np.uint8)) in (0, 1)
    trainer.close()


def test_a_uint8_board_of_small_integers_is_a_vector_not_an_image():
    """Images are uint8 Boxes bounded by 0 and 255 (as SB3's is_image_space); a board with other bounds
    is packed as values, with its bounds kept, and read by the flat encoder without scaling."""
    from canter.models.cnn import is_image_space

    board = gym.spaces.Box(0, 12, (8, 8), np.uint8)
    assert not is_image_space(board) and is_image_space(gym.spaces.Box(0, 255, (8, 8), np.uint8))
    packed = ObservationPacker(gym.spaces.Dict({"board": board, "img": IMAGE}), gym.spaces.Discrete(2)).space
    assert packed.images == ((64, (40, 40, 3)),) and packed.vector_slices() == [slice(0, 64)]  # keys sorted
    assert packed.high[:64].max() == 12 and packed.dtype == np.uint8
    assert make_encoder(board).out_dim == 64  # flat

def test_uint8_and_float_packing_give_the_same_features():
    """The float32 vector holds the same pixel integers: the encoder reads both alike."""
    obs_u8 = make_vec_env(ENV, 2).reset(seed=3)  # flip one-hot (2 columns), then the pixels
    vec = make_vec_env(ENV, 2, env_kwargs={"float_flip": True})
    obs_f = vec.reset(seed=3)  # flip as -1 / 1 (1 column), then the pixels
    assert obs_u8.dtype == np.uint8 and obs_f.dtype == np.float32
    np.testing.assert_array_equal(obs_u8[:, 2:], obs_f[:, 1:])
    np.testing.assert_array_equal(obs_u8[:, 1], obs_f[:, 0] > 0)
    enc_u8, enc_f = make_encoder(make_vec_env(ENV, 1).single_observation_space), make_encoder(vec.single_observation_space)
    enc_f.load_state_dict(enc_u8.state_dict())
    with torch.no_grad():
        a, b = enc_u8(torch.from_numpy(obs_u8)), enc_f(torch.from_numpy(obs_f))
    np.testing.assert_array_equal(a[:, :256].numpy(), b[:, :256].numpy())


def test_images_with_an_action_mask_are_refused(capsys, tmp_path):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "masked_env:DictPick-v0", "--set",
                                            "env_kwargs={image: true, masked: true}"],
                         "observations with both image entries and an action mask are not supported")


def test_observation_normalisation_leaves_pixels_raw():
    agent = canter.make_trainer("ppo", ENV, seed=0, max_steps=64, n_envs=2, n_steps=32, quiet=True,
                                env_kwargs={"float_flip": True}, normalize_obs=True, eval_every=0).agent
    obs = make_vec_env(ENV, 2, env_kwargs={"float_flip": True}).reset(seed=0)
    out = agent.normalize_obs(obs, update=True)
    np.testing.assert_array_equal(out[:, 1:], obs[:, 1:])  # the pixels
    assert abs(out[:, 0]).max() < abs(obs[:, 0]).max() or np.all(out[:, 0] == 0)


def test_ppo_learns_from_an_image_and_a_vector_together(tmp_path):
    """DictImageCue-v0 pays only a policy that reads the image and the flag: 5 of 10 from either alone."""
    run = tmp_path / "ppo"
    canter.train("ppo", env=ENV, seed=0, max_steps=8_000, n_envs=8, n_steps=32, batch_size=64, n_epochs=10,
                 lr=1e-3, run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["last_eval_return"] >= 9.5, summary
    meta = json.loads((run / "checkpoints" / "last.json").read_text())
    assert meta["observation_space"]["images"] == [[2, [36, 36, 1]]]
    agent = canter.load(run)
    obs = make_vec_env(ENV, 4).reset(seed=5)
    np.testing.assert_array_equal(agent.predict(obs), canter.load(run / "checkpoints" / "last").predict(obs))
    want = (obs[:, 2:].reshape(4, 36, 36)[:, 0, 20] > 0).astype(int) ^ obs[:, 1].astype(int)
    np.testing.assert_array_equal(agent.predict(obs), want)


def test_dqn_learns_from_float_packed_images(tmp_path):
    run = tmp_path / "dqn"
    trainer = canter.make_trainer("dqn", ENV, seed=0, max_steps=2000, learning_starts=500, train_freq=4, lr=1e-3,
                                  exploration_fraction=0.3, target_update_interval=500, env_kwargs={"float_flip": True},
                                  run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    losses = [r.losses["loss"] for r in trainer() if r.losses and "loss" in r.losses]
    assert losses and np.isfinite(losses).all()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["last_eval_return"] >= 9.5, summary
    assert canter.load(run).observation_space.dtype == np.float32


def test_td3_learns_continuous_actions_from_an_image_and_a_vector(tmp_path):
    """ImageReach-v0 with a Dict observation: acting 0 earns about -3.4, reading only the vector -2.5."""
    run = tmp_path / "td3"
    canter.train("td3", env="image_dict_env:ImageReach-v0", env_kwargs={"dict_obs": True}, seed=0, max_steps=600,
                 learning_starts=250, batch_size=64, run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["last_eval_return"] >= -1.0, summary
    agent = canter.load(run)
    assert isinstance(agent.algorithm.actor.encoder, MultiInputEncoder)
    assert isinstance(agent.algorithm.critic.encoder, MultiInputEncoder)


def test_sac_learns_from_image_observations(tmp_path):
    """A Box image observation: the actor and the critic each get a Nature CNN (acting 0 earns about -5)."""
    run = tmp_path / "sac"
    canter.train("sac", env="image_dict_env:ImageReach-v0", seed=0, max_steps=1000, learning_starts=250,
                 batch_size=64, run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["last_eval_return"] >= -3.0, summary
    agent = canter.load(run)
    assert isinstance(agent.algorithm.actor.encoder, NatureCNN)
    obs = make_vec_env("image_dict_env:ImageReach-v0", 4).reset(seed=1)
    np.testing.assert_array_equal(agent.predict(obs), canter.load(run / "checkpoints" / "last").predict(obs))


@pytest.mark.slow  # ~30 s: keeps the default suite near its 15-minute budget
def test_sac_discrete_learns_from_an_image_and_a_vector(tmp_path):
    """The actor and the critics each get a multi encoder; the critics' is in the Polyak target."""
    run = tmp_path / "sacd"
    canter.train("sac_discrete", env=ENV, seed=0, max_steps=1500, learning_starts=250, batch_size=64,
                 run_dir=run, quiet=True, eval_every=0, eval_episodes=10)
    assert json.loads((run / "summary.json").read_text())["last_eval_return"] >= 9.5
    model = canter.load(run).algorithm.model
    assert isinstance(model.encoder, MultiInputEncoder) and isinstance(model.critic_encoder, MultiInputEncoder)
    assert model.encoder is not model.critic_encoder


@pytest.mark.slow  # 13-35 s here
def test_acer_learns_from_an_image_and_a_vector_with_gamma_0_9(tmp_path):
    """ACER's defaults stay at chance here (4.4 of 10 after 60k steps): truncated 10-step episodes bootstrap,
    so gamma 0.99 asks the Q head for about 50-100 while the actions differ by 1, and the shared tanh
    trunk saturates for every observation (no gradient reaches the encoder). With gamma 0.9 (Q about 5-10)
    seeds 0-4 all reached 10 (docs/algorithms/acer.md)."""
    run = tmp_path / "acer"
    canter.train("acer", env=ENV, seed=0, max_steps=12_000, gamma=0.9, run_dir=run, quiet=True, eval_every=0,
                 eval_episodes=10)
    assert json.loads((run / "summary.json").read_text())["last_eval_return"] >= 9.5
    assert isinstance(canter.load(run).algorithm.model.encoder, MultiInputEncoder)


def test_acer_keeps_image_observations_as_uint8_in_its_segment_replay():
    """ACER's segment replay stored images as float32 (4x the memory of the frames) and replayed them as such."""
    from canter.registry import register
    from support import Box22Actions

    shape = (12, 12)

    class Img(Box22Actions):
        observation_space, action_space = gym.spaces.Box(0, 255, shape, np.uint8), gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            self.t = 0
            return np.full(shape, 200, np.uint8), {}

        def step(self, action):
            self.t += 1
            return np.full(shape, 200 + self.t, np.uint8), float(action), False, self.t >= 8, {}

    register("env", "AcerImage-test")(lambda render_mode=None, **kw: Img())
    trainer = canter.make_trainer("acer", "AcerImage-test", max_steps=160, n_envs=2, n_steps=8, replay_start=16,
                                  eval_every=0, eval_episodes=1, quiet=True)
    list(trainer())
    replay = trainer.replay
    assert replay.obs.dtype == torch.uint8 and int(replay.obs.max()) >= 201  # the frames as given, not wrapped
    assert trainer.algorithm.updates > 0
    trainer.close()
