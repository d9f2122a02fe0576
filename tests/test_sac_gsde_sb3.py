"""SAC's and TQC's gSDE sample against Stable-Baselines3's: the actions, their log-probabilities and every
actor gradient, the hidden layers' included (SB3's SAC and sb3-contrib's TQC actors use learn_features=True)."""
import gymnasium as gym
import pytest
import torch

from canter.registry import lookup

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.torch_layers import FlattenExtractor  # noqa: E402
from stable_baselines3.sac.policies import Actor  # noqa: E402


@pytest.mark.parametrize("algo", ["sac", "tqc"])
def test_gsde_sample_and_its_gradients_match_stable_baselines3(algo):
    space = gym.make("Pendulum-v1")
    cls = lookup("algorithm", algo)
    algorithm = cls(space.observation_space, space.action_space, cls.Config(use_sde=True, net_arch=[16]), seed=0)
    ours = algorithm.actor
    theirs = Actor(space.observation_space, space.action_space, net_arch=[16],  # SAC's actor (sb3-contrib's TQC's)
                   features_extractor=FlattenExtractor(space.observation_space), features_dim=3, use_sde=True,
                   log_std_init=-1.0)
    with torch.no_grad():  # canter's weights into SB3's actor (trunk, mean head, gSDE log std)
        ours.sde_log_std.fill_(-1.0)  # wider noise than the default -3, so the noise path carries weight
        for a, b in zip(ours.trunk.parameters(), theirs.latent_pi.parameters()):
            b.copy_(a)
        theirs.mu[0].weight.copy_(ours.head.weight)
        theirs.mu[0].bias.copy_(ours.head.bias)
        theirs.log_std.copy_(ours.sde_log_std)
    theirs.action_dist.epsilon = 0.0  # SB3's variance epsilon; canter adds 1e-6 (checked within tolerance)
    theirs.action_dist.bijector.epsilon = 0.0  # SB3's log(1 - tanh^2 + eps); canter's is exact
    obs = torch.randn(32, 3, generator=torch.Generator().manual_seed(0))
    weights = ours.sde_log_std.exp().detach() * torch.randn(ours.sde_log_std.shape, generator=torch.Generator()
                                                            .manual_seed(1))
    theirs.action_dist.exploration_mat = weights.clone()
    actions, log_prob = algorithm.sample(obs, weights)
    their_actions, their_log_prob = theirs.action_log_prob(obs)
    torch.testing.assert_close(actions, their_actions, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(log_prob, their_log_prob, rtol=1e-4, atol=1e-4)
    ours_params = [*ours.trunk.parameters(), ours.head.weight, ours.head.bias, ours.sde_log_std]
    their_params = [*theirs.latent_pi.parameters(), theirs.mu[0].weight, theirs.mu[0].bias, theirs.log_std]
    ours_grads = torch.autograd.grad((log_prob + actions.sum(-1)).sum(), ours_params)
    their_grads = torch.autograd.grad((their_log_prob + their_actions.sum(-1)).sum(), their_params)
    for name, a, b in zip(["trunk"] * 4 + ["mean head", "mean head", "log std"], ours_grads, their_grads):
        torch.testing.assert_close(a, b, rtol=2e-3, atol=2e-4, msg=lambda m, name=name: f"{name}: {m}")
    assert any(g.abs().sum() > 0 for g in ours_grads[:4])
