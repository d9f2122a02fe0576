"""Atari image models and data: CNN encoders and their input layouts, uint8 image observations,
frame-once replay, and a short training run on Pong."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
pytest.importorskip("cv2", reason="gymnasium's AtariPreprocessing needs opencv (part of the 'atari' extra)")

import canter  # noqa: E402
from canter.agents.agent import Agent  # noqa: E402
from canter.algorithms.dqn import DQN, DQNConfig  # noqa: E402
from canter.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from canter.data.batch import RolloutBatch  # noqa: E402
from canter.data.framestack import FrameStackReplay, bytes_per_transition  # noqa: E402
from canter.envs import make_vec_env  # noqa: E402
from canter.errors import CanterError  # noqa: E402
from canter.models.cnn import ImpalaResNet, NatureCNN, make_encoder  # noqa: E402
from canter.models.mlp import ActorCritic  # noqa: E402
from canter.models.q_network import QNetwork  # noqa: E402
from support import FRAMES, filled_frame_replays  # noqa: E402


# ---------------------------------------------------------------------------------------------- models
@pytest.mark.parametrize("encoder", ["nature", "impala"])
def test_cnn_input_layout_follows_the_pass_and_values_do_not(encoder):
    """Channels-last batches for training; the Nature CNN takes plain NCHW without gradients (faster
    there), IMPALA's ResNet channels-last both ways; the features are the same either way."""
    space = gym.spaces.Box(0, 255, FRAMES, np.uint8)
    net = make_encoder(space, encoder)
    obs = torch.randint(0, 256, (3,) + FRAMES, dtype=torch.uint8)
    with torch.no_grad():
        x = net.to_input(obs)
        assert x.is_contiguous(memory_format=torch.channels_last) == (encoder == "impala")
        no_grad = net(obs)
    x = net.to_input(obs)
    assert x.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(x, obs.float() / 255.0)
    torch.testing.assert_close(net(obs).detach(), no_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [3, 100])  # both sides of to_input's small-batch conversion
def test_channels_last_rollouts_train_exactly_like_nchw_ones(batch):
    """``training_layout`` permutes a uint8 batch once (same shape and values); minibatch rows keep
    the layout, the encoder's float input is identical, and so is a PPO update (bit for bit)."""
    space, actions = gym.spaces.Box(0, 255, FRAMES, np.uint8), gym.spaces.Discrete(6)
    obs = torch.randint(0, 256, (batch,) + FRAMES, dtype=torch.uint8)
    net = make_encoder(space)
    cl = net.training_layout(obs)
    assert cl.is_contiguous(memory_format=torch.channels_last) and torch.equal(cl, obs)
    rows = cl[torch.randperm(batch)[:2]]
    assert rows.is_contiguous(memory_format=torch.channels_last)
    x, x_cl = net.to_input(obs), net.to_input(cl)
    assert torch.equal(x, x_cl) and x.stride() == x_cl.stride() and x.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(x, obs.float() * (1.0 / 255.0))
    one = obs[:1]
    assert net.training_layout(one) is one  # a single observation is returned as it is

    def trained(prepare: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        algo = PPO(space, actions, PPOConfig(n_epochs=2, batch_size=max(2, batch // 2), net_arch=[16]), seed=0)
        agent = Agent(algo)
        n = batch
        rb = RolloutBatch(obs, torch.randint(0, 6, (n,)), torch.full((n,), -1.79), torch.zeros(n),
                          torch.randn(n, generator=torch.Generator().manual_seed(1)), torch.ones(n))
        if prepare:
            rb = agent.prepare_rollout_batch(rb)
            assert rb.obs.is_contiguous(memory_format=torch.channels_last)
        agent.learn(rb)
        return [p.detach().clone() for p in algo.model.parameters()]

    for a, b in zip(trained(False), trained(True)):
        assert torch.equal(a, b)


def test_prepare_rollout_batch_leaves_other_models_alone():
    """Flat observations and user encoders get the batch object back unchanged."""
    flat = Agent(PPO(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), PPOConfig(), seed=0))
    batch = RolloutBatch(*(torch.zeros(4, 4) if i == 0 else torch.zeros(4) for i in range(6)))
    assert flat.prepare_rollout_batch(batch) is batch

    class OwnModel(ActorCritic):  # a user's model class (defined outside canter) on a canter encoder
        pass

    space = gym.spaces.Box(0, 255, FRAMES, np.uint8)
    algo = PPO(space, gym.spaces.Discrete(6), PPOConfig(net_arch=[16]), seed=0)
    images = RolloutBatch(torch.zeros((4,) + FRAMES, dtype=torch.uint8), *(torch.zeros(4) for _ in range(5)))
    assert Agent(algo).prepare_rollout_batch(images).obs.is_contiguous(memory_format=torch.channels_last)
    algo.model.__class__ = OwnModel
    assert Agent(algo).prepare_rollout_batch(images) is images


@pytest.mark.parametrize("shape", [(84, 84), (84, 84, 3), (84, 84, 1), (2, 84, 84)])
@pytest.mark.parametrize("encoder", ["nature", "impala"])
def test_every_documented_image_layout_builds_and_matches_a_plain_nchw_pass(encoder, shape):
    """``[H, W]``, ``[H, W, C]`` and ``[C, H, W]`` uint8 images all get a CNN whose output equals the
    features of the same images as ``[B, C, H, W]`` floats in [0, 1] (channels-first, contiguous)."""
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    net = make_encoder(space, encoder)
    obs = torch.randint(0, 256, (5,) + shape, dtype=torch.uint8)
    x = obs.float() / 255.0
    x = x.unsqueeze(1) if len(shape) == 2 else (x.permute(0, 3, 1, 2) if shape[-1] in (1, 3) else x)
    with torch.no_grad():
        ref = net.features(x.contiguous())
        assert ref.shape == (5, net.out_dim)
        torch.testing.assert_close(net(obs), ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(net(net.training_layout(obs)), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(net(obs).detach(), ref, rtol=1e-4, atol=1e-4)  # the channels-last training pass


def test_image_observations_get_a_cnn_and_stay_uint8_until_it():
    space, actions = gym.spaces.Box(0, 255, FRAMES, np.uint8), gym.spaces.Discrete(6)
    assert isinstance(make_encoder(space), NatureCNN) and make_encoder(space).out_dim == 3136
    assert isinstance(make_encoder(space, "impala"), ImpalaResNet) and make_encoder(space, "impala").out_dim == 3872
    assert make_encoder(gym.spaces.Box(-1, 1, (4,))).out_dim == 4
    with pytest.raises(CanterError, match="did you mean 'impala'"):
        make_encoder(space, "impalla")
    obs = torch.randint(0, 256, (5,) + FRAMES, dtype=torch.uint8)
    q = QNetwork(space, actions, [512])
    assert q.value(obs).shape == (5, 6)
    ac = ActorCritic(space, actions, [512], "relu", shared_trunk=True)
    assert not ac.manual_backward  # the hand-derived PPO gradients do not cover the encoder
    logits, value = ac.action_value(obs)
    (logits.sum() + value.sum()).backward()
    assert ac.encoder.net[0].weight.grad.abs().sum() > 0  # gradients reach the first conv layer
    # dividing by 255 happens inside: a uint8 batch and the same batch as [0, 1] floats agree
    enc = make_encoder(space)
    with torch.no_grad():
        assert torch.allclose(enc(obs), enc.features(obs.float() / 255.0), atol=1e-6)
        assert not torch.allclose(enc(obs), enc.features(obs.float()), atol=1e-3)


def test_predict_takes_image_observations_as_lists_and_floats_of_the_same_pixels():
    """README: predict takes NumPy arrays, lists or torch tensors. A list of uint8 frames became int64 and a
    float tensor stayed float, and the CNN, which divides only uint8 input by 255, acted on unscaled pixels."""
    space = gym.spaces.Box(0, 255, FRAMES, np.uint8)
    algo = DQN(space, gym.spaces.Discrete(6), DQNConfig(net_arch=[8]), seed=0)
    torch.manual_seed(0)
    with torch.no_grad():  # larger weights than the initial ones, so that the greedy actions differ between frames
        for p in algo.modules()["q"].parameters():
            p.normal_(0, 0.3)
    agent = Agent(algo)
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 256, (16,) + FRAMES, dtype=np.uint8) // rng.integers(1, 64, (16, 1, 1, 1)).astype(np.uint8)
    ref = agent.predict(obs)
    assert len(set(ref.tolist())) > 1  # the test can tell actions apart
    np.testing.assert_array_equal(agent.predict(obs.tolist()), ref)
    np.testing.assert_array_equal(agent.predict(torch.from_numpy(obs).float()), ref)
    assert agent.predict(obs[3].tolist()) == ref[3]
    with pytest.raises(CanterError, match="image observations are uint8 pixel values 0..255"):
        agent.predict(obs / 255.0)


# ---------------------------------------------------------------------------------------------- replay
@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_frame_stack_replay_rebuilds_exact_stacks_and_stores_each_frame_once(vectorization, tmp_path):
    n, capacity = 2, 600
    lean, full, _, ends = filled_frame_replays("ALE/Breakout-v5", n, vectorization, capacity, 900)  # wraps the ring
    assert ends >= 4
    idx = lean.sample_indices(1000)
    a, b = lean.transitions(idx), full.transitions(idx)
    assert torch.equal(a.obs, b.obs) and torch.equal(a.next_obs, b.next_obs) and torch.equal(a.rewards, b.rewards)
    assert (lean.hist < 3).any()  # episode starts were seen and rebuilt without earlier frames
    frames_bytes = lean.length * n * 84 * 84
    assert frames_bytes <= lean.nbytes() <= 1.1 * frames_bytes
    assert bytes_per_transition(lean) * 1_000_000 < 8e9
    assert full.nbytes() > 3.9 * lean.nbytes()
    # saved and loaded (the resumable checkpoint's replay file), it gives the same batches
    restored = FrameStackReplay(capacity, FRAMES, (), np.uint8, np.int64, n_envs=n, seed=1)
    restored.load(lean.save(tmp_path / "replay.npz"))
    c = restored.transitions(idx)
    assert torch.equal(c.obs, a.obs) and torch.equal(c.next_obs, a.next_obs) and len(restored) == len(lean)


# ---------------------------------------------------------------------------------------------- smoke runs
@pytest.mark.parametrize("algo,overrides", [
    ("dqn", dict(max_steps=300, learning_starts=100, buffer_size=1000, batch_size=32)),
    ("ppo", dict(max_steps=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1)),
    ("impala", dict(max_steps=160, n_envs=4, n_steps=20)),  # the preset's IMPALA ResNet encoder
])
def test_short_training_run_on_pong(tmp_path, algo, overrides):
    run_dir = tmp_path / algo
    canter.train(algo, "ALE/Pong-v5", run_dir=run_dir, eval_episodes=1, eval_envs=1, eval_every=0, **overrides)
    losses = pq.read_table(run_dir / "updates.parquet").column("loss" if algo == "dqn" else "value_loss").to_pylist()
    assert losses and all(math.isfinite(x) for x in losses)
    assert (run_dir / "history.parquet").exists() and (run_dir / "summary.json").exists()
    score = pq.read_table(run_dir / "evaluations.parquet").column("mean_return").to_pylist()[-1]
    assert -21 <= score <= 21 and score == int(score)  # whole Pong games
    agent = canter.load(run_dir)
    if algo == "impala":
        assert isinstance(agent.algorithm.model.encoder, ImpalaResNet)
    env = make_vec_env("ALE/Pong-v5", 1, "native")
    actions = agent.predict(env.reset(seed=0))
    env.close()
    assert actions.shape == (1,) and 0 <= actions[0] < 6


@pytest.mark.parametrize("encoder, cls", [("auto", NatureCNN), ("impala", ImpalaResNet)])
def test_acer_reads_images_through_a_cnn(encoder, cls, tmp_path):
    """ACER's mlp_actor_q had no encoder option: an image entered its MLP flattened, as 0-255 values."""
    from canter.algorithms.acer import ACER, ACERConfig

    space, actions = gym.spaces.Box(0, 255, FRAMES, np.uint8), gym.spaces.Discrete(6)
    alg = ACER(space, actions, ACERConfig(net_arch=[64], encoder=encoder))
    assert isinstance(alg.model.encoder, cls) and isinstance(alg.avg_model.encoder, cls)
    obs = torch.randint(0, 256, (3,) + FRAMES, dtype=torch.uint8)
    logits, q = alg.model.action_q(obs)
    (logits.sum() + q.sum()).backward()
    assert logits.shape == q.shape == (3, 6)
    assert next(alg.model.encoder.parameters()).grad.abs().sum() > 0  # gradients reach the CNN
    flat = ACER(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), ACERConfig(net_arch=[8]))
    assert flat.model.trunk[0].in_features == 4  # vectors: the flat encoder, as before
