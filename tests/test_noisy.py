"""NoisyNet (canter.models.noisy): the layer's formula and noise, and DQN exploring with it."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import canter
from canter.envs.make import make_vec_env
from canter.errors import CanterError
from canter.models.noisy import NoisyLinear, noiseless, noisy_layers, reset_noise


def test_noisy_linear_is_the_factorised_formula():
    torch.manual_seed(0)
    layer = NoisyLinear(5, 3, sigma_0=0.5)
    assert torch.allclose(layer.weight_sigma, torch.full((3, 5), 0.5 / 5 ** 0.5))
    assert layer.weight_mu.abs().max() <= 1 / 5 ** 0.5
    layer.reset_noise(torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(1)
    f = [(lambda x: x.sign() * x.abs().sqrt())(torch.randn(n, generator=g)) for n in (5, 3)]
    assert torch.equal(layer.eps_in, f[0]) and torch.equal(layer.eps_out, f[1])
    x = torch.randn(4, 5)
    w = layer.weight_mu + layer.weight_sigma * torch.outer(f[1], f[0])
    b = layer.bias_mu + layer.bias_sigma * f[1]
    torch.testing.assert_close(layer(x), x @ w.T + b)
    with noiseless(layer):
        torch.testing.assert_close(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
        with noiseless(layer):
            pass
        assert not layer.noise_on  # an inner block leaves the outer one's setting
    assert layer.noise_on
    layer(x).sum().backward()  # the noise scales learn
    assert layer.weight_sigma.grad.abs().sum() > 0 and layer.bias_sigma.grad.abs().sum() > 0
    assert {"eps_in", "eps_out"} <= set(layer.state_dict())  # the noise is saved with the weights


def test_dqn_with_noisy_layers_explores_by_noise(tmp_path):
    """Epsilon stays 0; exploring actions follow the noise, deterministic ones the mean weights; each
    gradient step draws new noise for the online and the target network."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=600, learning_starts=200, noisy=True,
                                  dueling=True, run_dir=tmp_path / "run", quiet=True, eval_every=0, eval_episodes=2)
    algo = trainer.agent.algorithm
    # the trunk's first layer, then each dueling stream its own hidden and output layer
    assert len(noisy_layers(algo.q)) == 5 and len(noisy_layers(algo.q_target)) == 5
    assert not algo.uses_manual_backward
    before = noisy_layers(algo.q)[0].eps_in.clone()
    records = list(trainer())
    assert algo.epsilon == 0.0 and np.isfinite([r.losses["loss"] for r in records if r.losses]).all()
    assert not torch.equal(noisy_layers(algo.q)[0].eps_in, before)
    assert not torch.equal(noisy_layers(algo.q)[0].eps_in, noisy_layers(algo.q_target)[0].eps_in)
    trained_noise = [layer.eps_out.clone() for layer in noisy_layers(algo.q)]
    obs = make_vec_env("CartPole-v1", 64).reset(seed=1)
    agent = trainer.agent
    greedy = agent.predict(obs)
    reset_noise(algo.q, torch.Generator().manual_seed(5))
    np.testing.assert_array_equal(agent.predict(obs), greedy)  # the mean weights: noise does not matter
    with noiseless(algo.q), torch.no_grad():
        mean_q = algo.q.value(torch.from_numpy(obs))
    np.testing.assert_array_equal(greedy, mean_q.argmax(-1).numpy())
    explored = [agent.explore(obs) for _ in range(2)]  # noise is redrawn at learning, not acting: same moves
    np.testing.assert_array_equal(*explored)
    loaded = canter.load(tmp_path / "run" / "checkpoints" / "last")
    np.testing.assert_array_equal(loaded.predict(obs), greedy)
    for layer, eps_out in zip(noisy_layers(loaded.algorithm.q), trained_noise, strict=True):
        assert torch.equal(layer.eps_out, eps_out)  # the noise is saved with the weights
    again = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=600, learning_starts=200, noisy=True,
                                dueling=True, quiet=True, eval_every=0, eval_episodes=2)
    assert [r.losses for r in again()] == [r.losses for r in records]  # the noise comes from the seeded generator


def test_noisy_needs_a_model_that_builds_noisy_layers(tmp_path, monkeypatch):
    (tmp_path / "plain_q.py").write_text(
        "from canter.models.q_network import QNetwork\n"
        "class PlainQ(QNetwork):\n"
        "    def __init__(self, obs_space, act_space, noisy=False, **kw):\n"
        "        super().__init__(obs_space, act_space, **kw)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CanterError, match="noisy=true needs a model with noisy layers; PlainQ built none"):
        canter.make_trainer("dqn", "CartPole-v1", model="plain_q:PlainQ", noisy=True)


def test_noisy_dqn_learns_dict_pick(tmp_path):
    """A quick check that the noisy network trains (random play earns 2.5 of 10)."""
    canter.train("dqn", env="masked_env:DictPick-v0", seed=0, noisy=True, max_steps=3000, learning_starts=300,
                 train_freq=4, lr=1e-3, target_update_interval=300, run_dir=tmp_path / "run", quiet=True,
                 eval_every=0, eval_episodes=10)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["last_eval_return"] >= 9.5


@pytest.mark.slow
def test_noisy_dqn_solves_cartpole_with_the_preset_for_most_seeds(tmp_path):
    """rl-zoo3's CartPole settings with NoisyNet in place of epsilon-greedy solve CartPole for about
    two seeds in three, and which ones depends on float rounding (the CPU, the order of a sum): on a
    Zen 4 host seeds 1-3 reached 224 / 500 / 479 on 2026-11-25, and after the clipping norm became a
    BLAS dot product (2026-11-26) seeds 1-6 reached 304 / 193 / 500 / 499 / 500 / 500. So: most of five
    seeds solve (three; with two in three solving, fewer happen about 21% of the time, against 26% for
    two of three seeds) and every one learns (random play scores ~20)."""
    best = []
    for seed in (1, 2, 3, 4, 5):
        canter.train("dqn", env="CartPole-v1", seed=seed, noisy=True, run_dir=tmp_path / f"run{seed}", quiet=True)
        best.append(json.loads((tmp_path / f"run{seed}" / "summary.json").read_text())["best_eval_return"])
    assert min(best) >= 150 and sum(b >= 475 for b in best) >= 3, best


@pytest.mark.parametrize("algo", ["qrdqn", "iqn", "c51"])
def test_the_distributional_variants_take_noisy_layers(algo):
    trainer = canter.make_trainer(algo, "CartPole-v1", seed=0, max_steps=800, learning_starts=300, noisy=True,
                                  dueling=True, net_arch=[32, 32], quiet=True, eval_every=0, eval_episodes=1)
    layers = noisy_layers(trainer.agent.algorithm.q)
    before = [{k: v.clone() for k, v in layer.named_parameters()} for layer in layers]
    losses = [r.losses["loss"] for r in trainer() if r.losses]
    assert layers and losses and np.isfinite(losses).all()
    for layer, start in zip(layers, before, strict=True):  # every noisy layer's means and scales learned
        for name, value in layer.named_parameters():
            assert not torch.equal(value, start[name]), name


@pytest.mark.parametrize("routed", [False, True])
def test_noisy_layer_gradients_on_either_kernel(routed, monkeypatch):
    """Large products run on oneDNN (canter.models.linear); the noisy layer must record the autograd
    graph there too (it once took the graph-free route, so every layer below it stopped learning)."""
    import canter.models.linear as L

    if routed and not L.onednn_available():
        pytest.skip("torch without oneDNN")
    monkeypatch.setattr(L, "_routed", lambda *args: routed)
    torch.manual_seed(0)
    layer = NoisyLinear(6, 4)
    layer.reset_noise(torch.Generator().manual_seed(2))
    x = torch.randn(5, 6, requires_grad=True)
    for noise in (True, False):
        layer.noise_on = noise
        w = layer.weight_mu + (layer.weight_sigma * torch.outer(layer.eps_out, layer.eps_in) if noise else 0)
        b = layer.bias_mu + (layer.bias_sigma * layer.eps_out if noise else 0)
        expected = torch.autograd.grad((x @ w.T + b).square().sum(), [x, *layer.parameters()], allow_unused=True)
        got = torch.autograd.grad(layer(x).square().sum(), [x, *layer.parameters()], allow_unused=True)
        for e, g in zip(expected, got, strict=True):
            assert (e is None) == (g is None)
            if e is not None:
                torch.testing.assert_close(g, e)


def test_noisy_linear_takes_leading_dimensions():
    layer = NoisyLinear(3, 2)
    x = torch.randn(4, 5, 3)
    torch.testing.assert_close(layer(x), layer(x.reshape(20, 3)).reshape(4, 5, 2))
