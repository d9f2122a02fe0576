"""Dict and Tuple observations are flattened into one float32 vector per observation (canter.envs.packing;
those with images: tests/test_image_dict.py)."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import canter
from canter.envs.make import make_env, make_vec_env
from canter.envs.masks import MaskedBox
from canter.envs.packing import ObservationPacker
from canter.errors import CanterError

ENV = "masked_env:DictPick-v0"


@pytest.mark.parametrize("tuple_obs", [False, True])
def test_structured_observations_flatten_in_order(tuple_obs):
    """gymnasium's flatten: a Dict's entries in key order (flags, noise, target), a Tuple's in its order
    (target, noise, flags); Discrete entries one-hot."""
    env = make_vec_env(ENV, 2, env_kwargs={"tuple_obs": tuple_obs})
    space = env.single_observation_space
    assert type(space) is gym.spaces.Box and space.shape == (8,) and space.dtype == np.float32
    obs = env.reset(seed=0)
    assert obs.shape == (2, 8) and obs.dtype == np.float32
    one_hot, flags = (slice(0, 4), slice(6, 8)) if tuple_obs else (slice(4, 8), slice(0, 2))
    for row, e in zip(obs, env.env.envs):
        np.testing.assert_array_equal(row[one_hot], np.eye(4)[e.unwrapped.target])
        assert set(row[flags].tolist()) <= {0.0, 1.0}
    env.close()
    assert make_env(ENV, tuple_obs=tuple_obs).observation_space == space


def test_ppo_and_dqn_learn_from_dict_observations(tmp_path):
    for algo, kw in (("ppo", dict(n_envs=4, n_steps=64, batch_size=128, n_epochs=4, lr=1e-3)),
                     ("dqn", dict(learning_starts=300, train_freq=4, exploration_fraction=0.3, lr=1e-3,
                                  target_update_interval=300))):
        canter.train(algo, env=ENV, seed=0, max_steps=6000, run_dir=tmp_path / algo, quiet=True, eval_every=0,
                     eval_episodes=10, **kw)
        summary = json.loads((tmp_path / algo / "summary.json").read_text())
        assert summary["last_eval_return"] >= 9.0, (algo, summary)  # random play: 2.5 of 10
    agent = canter.load(tmp_path / "ppo")
    assert agent.observation_space.shape == (8,)


def test_a_dict_with_an_action_mask_and_several_entries():
    """The entries other than the mask are flattened (in key order), then the mask."""
    packer = ObservationPacker(make_env(ENV, masked=True).env.observation_space, gym.spaces.Discrete(4))
    assert isinstance(packer.space, MaskedBox) and packer.space.shape == (8 + 4,) and packer.space.mask_width == 4
    obs = {"target": 2, "noise": np.array([0.5, -0.5], np.float32), "flags": np.array([1, 0], np.int8),
           "action_mask": np.array([0, 0, 1, 1], np.int8)}
    flat = packer(obs)  # gymnasium's Dict orders its keys: flags, noise, target
    np.testing.assert_array_equal(flat, np.r_[[1, 0], [0.5, -0.5], [0, 0, 1, 0], [0, 0, 1, 1]].astype(np.float32))


@pytest.mark.parametrize("inner", [
    gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "target": gym.spaces.Discrete(3)}),
    gym.spaces.Tuple((gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3))),
], ids=["dict", "tuple"])
def test_a_structured_observation_entry_beside_an_action_mask(inner):
    """{"observation": Dict or Tuple, "action_mask": ...}: the observation entry is flattened on its own,
    then the mask (packing once looked the Dict's keys up in the outer observation: KeyError 'pos')."""
    space = gym.spaces.Dict({"observation": inner, "action_mask": gym.spaces.MultiBinary(4)})
    packer = ObservationPacker(space, gym.spaces.Discrete(4))
    assert isinstance(packer.space, MaskedBox) and packer.space.shape == (5 + 4,) and packer.space.mask_width == 4
    entry = {"pos": np.array([0.5, -0.5], np.float32), "target": 2} if isinstance(inner, gym.spaces.Dict) else \
        (np.array([0.5, -0.5], np.float32), 2)
    flat = packer({"observation": entry, "action_mask": np.array([0, 1, 1, 0], np.int8)})
    np.testing.assert_array_equal(flat, np.r_[[0.5, -0.5], [0, 0, 1], [0, 1, 1, 0]].astype(np.float32))
    assert packer.space.contains(flat)


def test_masked_dict_observations_train(tmp_path):
    canter.train("ppo", env=ENV, env_kwargs={"masked": True}, seed=0, max_steps=3000, n_envs=4, n_steps=64,
                 run_dir=tmp_path / "run", quiet=True, eval_every=0, eval_episodes=5)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["last_eval_return"] >= 9.0


def test_entries_that_do_not_flatten_are_refused():
    with pytest.raises(CanterError, match="Text space"):
        ObservationPacker(gym.spaces.Dict({"mission": gym.spaces.Text(8)}), gym.spaces.Discrete(2))


def test_an_unsupported_observation_space_names_the_supported_ones():
    """The error named only the refused space ('MLP models do not support observation space Text')."""
    from canter.models.mlp import obs_dim

    with pytest.raises(CanterError, match=r"^observation space Text is not supported: canter's models take Box, "
                                          r"Discrete, MultiDiscrete and MultiBinary observations, and Dict or Tuple"):
        obs_dim(gym.spaces.Text(5))


class _CategoricalObs(gym.Env):
    """Observes a MultiDiscrete([3, 2], start=[1, 0]) or a MultiBinary((2, 2)) value; Discrete(2) actions."""

    def __init__(self, binary: bool = False) -> None:
        self.observation_space = (gym.spaces.MultiBinary((2, 2)) if binary
                                  else gym.spaces.MultiDiscrete([3, 2], start=[1, 0]))
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):  # noqa: D102
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.last = self.observation_space.sample()
        return self.last, {}

    def step(self, action):  # noqa: D102
        self.last = self.observation_space.sample()
        return self.last, 0.0, False, True, {}


if "CategoricalObs-v0" not in gym.registry:
    gym.register("CategoricalObs-v0", entry_point=_CategoricalObs, disable_env_checker=True)


@pytest.mark.parametrize("binary", [False, True])
def test_multidiscrete_and_multibinary_observations_are_flattened(binary):
    """A plain MultiDiscrete / MultiBinary observation space was refused ('MLP models do not support
    observation space MultiDiscrete'), though the same spaces train inside a Dict and SB3 takes them:
    they are flattened as a Dict's entries are (one-hot per MultiDiscrete entry, MultiBinary as 0/1)."""
    env = make_vec_env("CategoricalObs-v0", 2, env_kwargs={"binary": binary})
    space = env.single_observation_space
    assert type(space) is gym.spaces.Box and space.dtype == np.float32 and space.shape == ((4,) if binary else (5,))
    obs = env.reset(seed=0)
    for row, e in zip(obs, env.env.envs):
        raw = e.unwrapped.last
        expected = raw.reshape(-1) if binary else np.r_[np.eye(3)[raw[0] - 1], np.eye(2)[raw[1]]]
        np.testing.assert_array_equal(row, expected)
    env.close()
    trainer = canter.make_trainer("dqn", "CategoricalObs-v0", env_kwargs={"binary": binary}, seed=0, max_steps=8,
                                  learning_starts=4, batch_size=4, quiet=True, eval_every=0)
    with trainer:
        for _ in trainer():
            pass
    assert trainer.agent.predict(obs).shape == (2,)
    # the raw observation (not one-hot / flattened) is packed as the env packs it (canter.envs.raw_observations)
    assert trainer.agent.predict(raw) == trainer.agent.predict(obs[-1])
    # one of another shape: a hint naming both forms predict takes, raw (as the env gives it) and packed (it once
    # said to wrap the env in pack_observations, as if a raw one were refused; once only the shapes)
    what = r"MultiBinary\(\[2, 2\]\)" if binary else r"MultiDiscrete\(\[3, 2\], start=\[1, 0\]\)"
    how = "" if binary else r" \(one-hot per entry\)"
    with pytest.raises(CanterError, match=rf"got an array of shape \(3,\); a {what} observation is taken as the env "
                                          rf"gives it, or packed into one vector{how} as .*pack_observations\(env\) "
                                          rf"gives it$"):
        trainer.agent.predict(np.ones(3, np.int64))


def test_checkpoints_record_the_packed_structure():
    """A packed Box's width and bounds alone once described a structured observation: a checkpoint of a
    Dict{img, vec} was evaluated on a Tuple(img, vec) env, and Dicts with entries of other sizes (or
    MultiDiscrete([3, 2]) and ([2, 3])) matched. The entries are recorded and compared, where both have them."""
    from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match, spaces_mismatch

    img, vec = gym.spaces.Box(0, 255, (8, 8, 1), np.uint8), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    box = lambda n: gym.spaces.Box(0.0, 1.0, (n,), np.float32)  # noqa: E731
    act = gym.spaces.Discrete(2)
    for trained, other, diff in (
            (gym.spaces.Dict({"img": img, "vec": vec}), gym.spaces.Tuple((img, vec)),
             "img: Box(8, 8, 1) vs [0]: Box(8, 8, 1)"),
            (gym.spaces.Dict({"a": box(3), "b": box(1)}), gym.spaces.Dict({"a": box(1), "b": box(3)}),
             "a: Box(3,) vs a: Box(1,)"),
            (gym.spaces.MultiDiscrete([3, 2]), gym.spaces.MultiDiscrete([2, 3]),
             "MultiDiscrete([3, 2]) vs MultiDiscrete([2, 3])")):
        a, b = ObservationPacker(trained, act).space, ObservationPacker(other, act).space
        saved = json.loads(json.dumps(space_to_dict(a)))
        back = space_from_dict(saved)
        assert spaces_match(back, a) and spaces_mismatch((back, act), (a, act)) is None
        message = spaces_mismatch((back, act), (b, act))
        assert message is not None and message.endswith(f"; packed observation entries differ: {diff}")
        del saved["layout"]  # a checkpoint written before layouts were recorded compares as it did
        old = space_from_dict(saved)
        assert spaces_match(old, b) and spaces_mismatch((old, act), (b, act)) is None
